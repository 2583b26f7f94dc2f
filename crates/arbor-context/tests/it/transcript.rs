//! The transcript written a batch of messages at a time
//! (`write_plan_transcript`, what `arbor context` prints) is the transcript
//! of the whole context built first (`write_transcript`), byte for byte: at a
//! spread of leaves of every fixture session (compactions, branch summaries,
//! usages), with and without the mapping for the model, and on a chain of
//! more messages than one batch holds. The same for the `--json --llm`
//! message list (`write_plan_llm_json`).

use arbor_context::render::{write_plan_transcript, write_transcript};
use arbor_context::{current_context_tokens, plan_session_context, session_context, Checked, TokenTally};
use arbor_tree::{OpenMode, Session, SessionOptions};

use arbor_test_support::{jsonl_under, write_big_session};

fn both(s: &Session, llm: bool) -> (String, String) {
    let mut whole = vec![];
    write_transcript(&mut whole, &session_context(s).unwrap(), llm).unwrap();
    let mut batched = vec![];
    let checked = write_plan_transcript(s, &plan_session_context(s).unwrap(), &mut batched, llm).unwrap();
    assert_eq!(checked, Checked::Written);
    (String::from_utf8(whole).unwrap(), String::from_utf8(batched).unwrap())
}

#[test]
fn the_transcript_written_a_batch_at_a_time_is_the_whole_one() {
    let mut compared = 0;
    for p in jsonl_under(&arbor_test_support::fixtures()) {
        let Ok(mut s) = Session::open(&p, OpenMode::ReadOnly, SessionOptions::default()) else { continue };
        let leaves: Vec<String> =
            s.positions().step_by((s.len() / 20).max(1)).filter_map(|i| s.id_at(i).map(|id| id.to_string())).collect();
        for id in leaves {
            s.branch(&id).unwrap();
            for llm in [false, true] {
                let (whole, batched) = both(&s, llm);
                assert_eq!(batched, whole, "{} at {id} (llm: {llm})", p.display());
            }
            let mut llm_json = vec![];
            arbor_context::write_plan_llm_json(&s, &plan_session_context(&s).unwrap(), &mut llm_json).unwrap();
            let whole = arbor_log::json::to_vec(&session_context(&s).unwrap().llm_messages()).unwrap();
            assert_eq!(
                String::from_utf8(llm_json).unwrap(),
                String::from_utf8(whole).unwrap(),
                "{} at {id}",
                p.display()
            );
            // The tally one message at a time gives what the whole list gives.
            let messages = session_context(&s).unwrap().messages;
            let mut tally = TokenTally::default();
            messages.iter().for_each(|m| tally.add(m));
            assert_eq!(tally.tokens(), current_context_tokens(&messages), "{} at {id}", p.display());
            compared += 1;
        }
    }
    assert!(compared > 50, "{compared} leaves compared");
}

#[test]
fn a_context_longer_than_a_batch_is_written_whole_and_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.jsonl");
    write_big_session(&p, 6000, 10);
    let s = Session::open(&p, OpenMode::ReadOnly, SessionOptions::default()).unwrap();
    let (whole, batched) = both(&s, false);
    assert_eq!(batched, whole);
    let lines: Vec<&str> = batched.lines().collect();
    assert!(lines.len() > 5000, "{} lines", lines.len());
    assert!(lines[0].starts_with("user: m0 ") && lines[lines.len() - 2].starts_with("assistant: a5999 "));
}
