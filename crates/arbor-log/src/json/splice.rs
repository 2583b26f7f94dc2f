//! A changed record written back into the text it was read from: the
//! members a migration did not touch keep their bytes (`1e400`, a 30-digit
//! integer, `2.50` stay as written), changed members are written as
//! `JSON.stringify` writes them, and new members come last, where
//! JavaScript's object order puts them.

use serde_json::Value;

/// One member of an object text: the key's text (quotes included), the key,
/// and the value's text.
struct Member<'a> {
    key_text: &'a [u8],
    key: String,
    value_text: &'a [u8],
}

/// The text of `new` written into `old`, the JSON text of an object it was
/// made from: each member of `new` whose value reads the same in `old` keeps
/// its text there, an object member that changed is spliced the same way,
/// and the rest is written as `JSON.stringify` writes it, in `new`'s member
/// order. `None` when `old` is not one object with distinct keys or `new`
/// is not an object (the caller then writes `new` whole).
pub fn splice(old: &[u8], new: &Value) -> Option<Vec<u8>> {
    let new = new.as_object()?;
    let members = members(old)?;
    let mut out = Vec::with_capacity(old.len() + 64);
    out.push(b'{');
    for (k, (key, value)) in new.iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        match members.iter().find(|m| m.key == *key) {
            Some(m) => {
                out.extend_from_slice(m.key_text);
                out.push(b':');
                out.extend_from_slice(&value_text(m.value_text, value)?);
            }
            None => {
                out.extend_from_slice(&super::to_vec(key).ok()?);
                out.push(b':');
                out.extend_from_slice(&super::to_vec(value).ok()?);
            }
        }
    }
    out.push(b'}');
    Some(out)
}

/// The text of `value` that was `old` before: `old` itself when it reads
/// the same, spliced when both are objects, else written anew.
fn value_text(old: &[u8], value: &Value) -> Option<Vec<u8>> {
    let same = std::str::from_utf8(old).ok().and_then(|t| super::parse(t).ok()).is_some_and(|v| v == *value);
    if same {
        return Some(old.to_vec());
    }
    if value.is_object() {
        if let Some(spliced) = splice(old, value) {
            return Some(spliced);
        }
    }
    super::to_vec(value).ok()
}

/// The members of the object text `text` (whitespace around it allowed);
/// `None` when it is not one object or a key repeats.
fn members(text: &[u8]) -> Option<Vec<Member<'_>>> {
    let mut at = skip_ws(text, 0);
    if text.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_ws(text, at + 1);
    let mut out: Vec<Member<'_>> = vec![];
    if text.get(at) == Some(&b'}') {
        return (skip_ws(text, at + 1) == text.len()).then_some(out);
    }
    loop {
        let key_end = string_end(text, at)?;
        let key_text = &text[at..key_end];
        let key: String = serde_json::from_slice(key_text).ok()?;
        at = skip_ws(text, key_end);
        if text.get(at) != Some(&b':') {
            return None;
        }
        let start = skip_ws(text, at + 1);
        let end = value_end(text, start)?;
        if out.iter().any(|m| m.key == key) {
            return None;
        }
        out.push(Member { key_text, key, value_text: &text[start..end] });
        at = skip_ws(text, end);
        match text.get(at) {
            Some(b',') => at = skip_ws(text, at + 1),
            Some(b'}') => return (skip_ws(text, at + 1) == text.len()).then_some(out),
            _ => return None,
        }
    }
}

fn skip_ws(text: &[u8], mut at: usize) -> usize {
    while text.get(at).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// The end (past the closing quote) of the string starting at `at`.
fn string_end(text: &[u8], at: usize) -> Option<usize> {
    if text.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    loop {
        i += memchr::memchr2(b'"', b'\\', text.get(i..)?)?;
        match text[i] {
            b'\\' => i += 2,
            _ => return Some(i + 1),
        }
    }
}

/// The end of the value starting at `at`: a string, a container (its
/// strings skipped whole) or a scalar.
fn value_end(text: &[u8], at: usize) -> Option<usize> {
    match text.get(at)? {
        b'"' => string_end(text, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match text.get(i)? {
                    b'"' => {
                        i = string_end(text, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let len = text[at..].iter().position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'));
            Some(at + len.unwrap_or(text.len() - at))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spliced(old: &str, new: Value) -> String {
        String::from_utf8(splice(old.as_bytes(), &new).unwrap()).unwrap()
    }

    #[test]
    fn untouched_members_keep_their_bytes() {
        let old = r#"{"type":"message","n":1e400,"big":123456789012345678901234567890,"f":2.50,"s":"a\u0041","o":{"x":1.0,"role":"hookMessage"}}"#;
        let mut v = crate::json::parse(old).unwrap();
        v["id"] = json!("0001");
        v["parentId"] = Value::Null;
        v["o"]["role"] = json!("custom");
        assert_eq!(
            spliced(old, v),
            r#"{"type":"message","n":1e400,"big":123456789012345678901234567890,"f":2.50,"s":"a\u0041","o":{"x":1.0,"role":"custom"},"id":"0001","parentId":null}"#
        );
    }

    #[test]
    fn removed_members_go_and_replaced_ones_stay_in_place() {
        let old = r#" { "type" : "compaction", "firstKeptEntryIndex" : 2 , "id":"old", "t": [1, {"a":"}"}] } "#;
        let mut v = crate::json::parse(old).unwrap();
        let o = v.as_object_mut().unwrap();
        o.shift_remove("firstKeptEntryIndex");
        o.insert("id".into(), json!("new"));
        o.insert("firstKeptEntryId".into(), json!("k"));
        assert_eq!(spliced(old, v), r#"{"type":"compaction","id":"new","t":[1, {"a":"}"}],"firstKeptEntryId":"k"}"#);
    }

    #[test]
    fn what_is_not_one_object_of_distinct_keys_is_left_to_the_caller() {
        for old in [r#"{"a":1,"a":2}"#, "[1]", r#"{"a":1} x"#, r#"{"a":"#, ""] {
            assert!(splice(old.as_bytes(), &json!({"a": 1})).is_none(), "{old}");
        }
        assert!(splice(b"{\"a\":1}", &json!([1])).is_none());
        assert_eq!(spliced("{}", json!({"v": 3})), r#"{"v":3}"#);
    }
}
