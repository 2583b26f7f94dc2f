//! pi's `allMessagesText` of a session file, read from the file (the
//! catalog keeps no message text). The listing facts themselves are
//! [`arbor_tree::listing::ListingFacts`], carried over between refreshes.

use arbor_tree::listing::ListingFacts;

/// pi's `allMessagesText` of a session file: the text of every user and
/// assistant message, joined with spaces (what `ls --json` prints; the
/// catalog keeps no message text, so this reads the file).
pub fn all_messages_text(path: &std::path::Path) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    let end = file.metadata()?.len();
    let mut lines = crate::lines::Lines::new(&file, 0, end);
    let mut facts = ListingFacts::default();
    let mut texts = vec![];
    while let Some(line) = lines.next_line()? {
        facts.feed_with_text(line.bytes, &mut texts);
    }
    let (_, rest) = lines.rest();
    if !rest.is_empty() {
        facts.feed_with_text(rest, &mut texts);
    }
    Ok(texts.join(" "))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::path::Path;

    use arbor_tree::listing::ListingKind;

    /// Facts of `bytes` fed line by line, and `read_session_info`'s answer.
    fn both(bytes: &[u8]) -> (ListingFacts, Option<arbor_tree::listing::SessionListInfo>) {
        let mut f = ListingFacts::default();
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            f.feed(line);
        }
        let info = arbor_tree::listing::read_session_info(bytes, Path::new("x.jsonl"), None).unwrap();
        (f, info)
    }

    #[test]
    fn agrees_with_read_session_info_on_every_fixture() {
        let mut checked = 0;
        for path in crate::test_support::fixture_logs() {
            let bytes = std::fs::read(&path).unwrap();
            let (f, info) = both(&bytes);
            if let Some(i) = &info {
                assert_eq!(all_messages_text(&path).unwrap(), i.all_messages_text, "{}", path.display());
            }
            match info {
                None => assert_ne!(f.kind, ListingKind::Session, "{}", path.display()),
                Some(i) => {
                    checked += 1;
                    let p = path.display();
                    assert_eq!(f.kind, ListingKind::Session, "{p}");
                    assert_eq!(
                        (f.id.as_str(), f.cwd.as_str(), f.created.as_str()),
                        (&*i.id, &*i.cwd, &*i.created),
                        "{p}"
                    );
                    assert_eq!(f.parent_session, i.parent_session_path, "{p}");
                    assert_eq!(f.name, i.name, "{p}");
                    assert_eq!(f.message_count as usize, i.message_count, "{p}");
                    assert_eq!(f.first_message.as_deref().unwrap_or("(no messages)"), i.first_message, "{p}");
                    let modified = arbor_log::time::format_iso_ms(f.modified_ms(0));
                    if !i.modified.is_empty() {
                        assert_eq!(modified, i.modified, "{p}");
                    }
                }
            }
        }
        assert!(checked > 30, "{checked} sessions checked");
    }
}
