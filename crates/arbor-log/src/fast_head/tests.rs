//! The fast validator's masks and heads against the slow paths.

mod mask_tests {
    use super::super::{escaped_by, Masks};

    /// The masks byte by byte.
    fn slow(b: &[u8], at: usize, c: u8) -> u64 {
        (0..64).filter(|k| b.get(at + k) == Some(&c)).fold(0, |m, k| m | 1 << k)
    }

    #[track_caller]
    fn check(hay: &[u8], at: usize) {
        let m = Masks::of(hay, at);
        assert_eq!(m.quotes, slow(hay, at, b'"'), "{hay:?} {at}");
        assert_eq!(m.backslashes, slow(hay, at, b'\\'), "{hay:?} {at}");
    }

    /// `escaped_by` bit by bit.
    fn slow_escaped(backslashes: u64, carry: bool) -> u64 {
        let (mut escaped, mut pending) = (0, carry);
        for k in 0..64 {
            if pending {
                escaped |= 1 << k;
                pending = false;
            } else {
                pending = backslashes >> k & 1 == 1;
            }
        }
        escaped
    }

    #[test]
    fn escaped_bytes_follow_odd_runs_of_backslashes() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut masks = vec![0, u64::MAX, 1, 1 << 63, 0x5555_5555_5555_5555, 0xAAAA_AAAA_AAAA_AAAA];
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Sparse and dense runs both.
            masks.push(x);
            masks.push(x & x.rotate_left(7) & x.rotate_left(19));
            masks.push(x | x.rotate_left(3));
        }
        for m in masks {
            for carry in [false, true] {
                assert_eq!(escaped_by(m, carry), slow_escaped(m, carry), "{m:064b} {carry}");
            }
        }
        assert_eq!(super::super::SIMPLE_ESCAPE.iter().filter(|&&ok| ok).count(), 8);
    }

    #[test]
    fn the_masks_flag_exactly_the_quotes_and_backslashes() {
        // Every byte value at every position of a block, the block cut short at several lengths.
        for c in 0..=255u8 {
            for len in [0usize, 1, 15, 16, 17, 63, 64, 65, 100, 128, 129] {
                let edges = [0, 1, 14, 15, 16, 17, 31, 32, 48, 62, 63, 64, 65, 127, 128];
                for pos in edges.into_iter().chain([len.saturating_sub(1)]).filter(|&p| p < len) {
                    let mut hay = vec![b'a'; len];
                    hay[pos] = c;
                    for at in [0, 1, pos, len.saturating_sub(64)] {
                        check(&hay, at);
                    }
                }
            }
        }
        let dense: Vec<u8> = (0..200).map(|k| [b'"', b'\\', 0x80 | b'"', 0x80 | b'\\', b'x'][k % 5]).collect();
        for at in 0..=dense.len() + 1 {
            check(&dense, at);
        }
    }
}

mod head_tests {
    use super::super::*;
    use crate::reader::{parse_line, Parsed};

    /// The head the full parser gives, or `None` when it refuses the line or it is not an object.
    fn slow_head(line: &str) -> Option<RecordHead> {
        match parse_line(line.as_bytes()).0 {
            Parsed::Object(v) => Some(RecordHead::from_value(&v)),
            _ => None,
        }
    }

    #[track_caller]
    fn sure(line: &str) {
        let fast = fast_head(line.as_bytes());
        assert!(fast.is_some(), "the fast path declined {line:?}");
        assert_eq!(fast, slow_head(line), "{line:?}");
    }

    #[track_caller]
    fn unsure(line: &str) {
        assert_eq!(fast_head(line.as_bytes()), None, "{line:?}");
    }

    #[test]
    fn ordinary_lines_take_the_fast_path() {
        sure(r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#);
        sure(
            r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"a \"quoted\" C:\\path\nnext \u00e9 \ud83d\ude00"}],"usage":{"input":1200,"cost":{"total":0.0081,"x":-1.5e-3,"y":12E2}},"stopReason":"stop","timestamp":1767225600222}}"#,
        );
        sure(r#"{ "type" : "label" , "id" : "b" , "parentId" : "a1" , "label" : [ ] , "x" : { } }"#);
        sure(r#"{"type":"t","type":"u","id":"i","id":5,"message":{"role":"user"},"message":[1]}"#);
        sure(r#"{"message":{"role":"user","role":null},"parentId":7}"#);
        sure(r#"{"a":[1e299,-0,0.5,123456789012345678901234567890,1E-400]}"#);
        sure(&format!(r#"{{"a":{}1{}}}"#, "[".repeat(126), "]".repeat(126)));
        sure("{}");
        sure("{\"type\":\"é\",\"id\":\"😀\",\"x\":\"\u{7f}\"}");
    }

    #[test]
    fn doubtful_lines_are_left_to_serde() {
        // Refused by serde_json.
        unsure(r#"{"a":"\ud83d"}"#);
        unsure(r#"{"a":"\ude00\ud83d"}"#);
        unsure(r#"{"a":"\ud83d\u0041"}"#);
        unsure(&format!(r#"{{"a":{}1{}}}"#, "[".repeat(127), "]".repeat(127)));
        unsure(r#"{"a":1e400}"#);
        unsure(r#"{"a":01}"#);
        unsure(r#"{"a":1,}"#);
        unsure("{\"a\":\"x\ty\"}");
        unsure(r#"{"a":1} x"#);
        // Accepted by serde_json, but not worth the fast path's while.
        unsure(r#"{"a":1e301}"#);
        unsure(r#"{"a":1e0000001}"#);
        unsure(r#"{"ty\u0070e":"x"}"#);
        unsure(r#"{"type":"\u0078"}"#);
        unsure(r#"{"$serde_json::private::RawValue":"1"}"#);
        unsure("{\t}");
        unsure("[1]");
        assert_eq!(fast_head(b"{\"a\":\"\xFF\"}"), None, "invalid UTF-8 is read lossily");
        assert_eq!(fast_head(b"{\"a\":\"\xC3\"}"), None);
    }
}
