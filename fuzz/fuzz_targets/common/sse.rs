//! What both event-stream targets check: arbitrary bytes as a model's
//! streamed response body, cut into chunks at the places the first byte
//! picks, decode to the same reply as the body in one piece (the decoder
//! does not depend on where the network cut the stream); the reply is an
//! assistant message whose stop reason is one pi knows, and its JSON
//! survives a round trip.

use arbor_agent::model::AssistantReply;

/// The stop reasons an assistant message may carry.
const STOP_REASONS: &[&str] = &["stop", "length", "toolUse", "error", "aborted"];

/// `body` in pieces of 1 to 64 bytes, sizes cycling from `pick`.
fn pieces(pick: u8, body: &[u8]) -> Vec<&[u8]> {
    let mut out = vec![];
    let mut rest = body;
    let mut size = usize::from(pick % 64) + 1;
    while !rest.is_empty() {
        let (head, tail) = rest.split_at(size.min(rest.len()));
        out.push(head);
        rest = tail;
        size = size * 7 % 64 + 1;
    }
    out
}

/// Replays `data` (first byte: how to cut; the rest: the body) whole and in
/// pieces through `replay`, and checks the replies.
pub fn check(data: &[u8], replay: impl Fn(&[&[u8]]) -> AssistantReply) {
    let Some((&pick, body)) = data.split_first() else { return };
    let whole = replay(&[body]);
    let cut = replay(&pieces(pick, body));
    assert_eq!(whole.json(), cut.json(), "the reply does not depend on where the stream was cut");
    assert!(STOP_REASONS.contains(&whole.stop_reason()), "stop reason {:?}", whole.stop_reason());
    assert_eq!(whole.json()["role"], "assistant");
    // Written as a session line is written, it reads back the same.
    let text = arbor_log::json::to_string(whole.json()).expect("a reply is JSON");
    let again = arbor_log::json::parse(&text).expect("a reply's JSON reads back");
    assert_eq!(&again, whole.json());
}
