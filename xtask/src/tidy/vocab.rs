//! Domain words are types: outside `arbor-log`, no library or CLI code spells
//! an entry type or a message role as a string literal; it names
//! `arbor_log::EntryType` / `arbor_log::Role` (or reads through
//! `MessageView`), so a typo cannot compile and a new variant is found by the
//! compiler, not by grep.
//!
//! The words are read from `crates/arbor-log/src/vocab.rs` (the one list the
//! enums are made from), so the check follows the vocabulary as it grows.
//! What is not refused:
//! - a literal used as a JSON *field name* (`"message"` and `"label"` are also
//!   fields): a key of `json!` (followed by `:`), or the argument of `get(`,
//!   `get_mut(`, `insert(`, `remove(`, `contains_key(` or an index `[`;
//! - comments, and test code (`#[cfg(test)]` items, `tests.rs`, `tests/`):
//!   tests spell the file format on purpose, so a typo in the vocabulary
//!   cannot hide in both the code and its test;
//! - [`ALLOWED`]: a foreign wire format that happens to use the same word,
//!   each with its reason.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use super::commands::{block_comment_end, char_end, code_only, rust_files, string_end};

/// Literals that are another format's words, not Arbor's: (file under the
/// repository root, the words, why).
pub const ALLOWED: &[(&str, &[&str], &str)] = &[
    (
        "crates/arbor-interop/src/import/claude.rs",
        &["user", "assistant", "message"],
        "Claude Code's record types (`type: \"user\"`), its `message` field and the import report's source names",
    ),
    (
        "crates/arbor-interop/src/import/codex.rs",
        &["message", "user", "assistant"],
        "Codex's payload type `message` and its roles, in Codex's own JSON",
    ),
    (
        "crates/arbor-agent/src/model/anthropic.rs",
        &["user", "assistant"],
        "the Anthropic Messages API's roles in the request body it sends",
    ),
    (
        "crates/arbor-agent/src/model/openai.rs",
        &["user", "assistant"],
        "the Chat Completions API's roles in the request body it sends",
    ),
    (
        "crates/arbor-agent/src/model/responses.rs",
        &["user", "assistant", "developer", "message"],
        "the OpenAI Responses API's roles and its `message` output items, in the bodies it sends and reads",
    ),
    ("crates/arbor-agent/src/model/http.rs", &["message"], "an API error body's `message` field"),
    ("crates/arbor-pg/src/conninfo.rs", &["user"], "libpq's connection parameter `user` (the database role)"),
    ("crates/arbor-pg/src/settings.rs", &["user"], "libpq's connection parameter `user` (the database role)"),
    ("crates/arbor-cli/src/ui/chat/commands.rs", &["label"], "the chat's `/label` command word"),
    (
        "crates/arbor-cli/src/ui/chat/settings.rs",
        &["compaction", "branchSummary"],
        "section names of pi's settings.json",
    ),
    (
        "crates/arbor-context/src/render/facts.rs",
        &["message"],
        "the entry's `message` field, matched as a key while deserializing a line",
    ),
];

/// The entry types and roles of `vocab.rs` (`Variant = "text",` lines of its macro calls).
pub fn words(vocab_rs: &str) -> Vec<String> {
    let mut out: Vec<String> = vocab_rs
        .lines()
        .filter_map(|l| {
            let (variant, rest) = l.trim().split_once(" = \"")?;
            let word = rest.strip_suffix("\",")?;
            let ok = variant.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                && variant.chars().all(|c| c.is_ascii_alphanumeric());
            ok.then(|| word.to_owned())
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Problems in the workspace at `root`: every refused literal, by file and line.
pub fn check(root: &Path) -> Result<Vec<String>> {
    let vocab_rs = root.join("crates/arbor-log/src/vocab.rs");
    let words = words(&fs::read_to_string(&vocab_rs).with_context(|| format!("reading {}", vocab_rs.display()))?);
    let mut problems = Vec::new();
    if words.len() < 10 {
        problems.push(format!("{}: found only {words:?} as entry types and roles", vocab_rs.display()));
    }
    let mut crates: Vec<_> = fs::read_dir(root.join("crates"))?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    crates.sort();
    for dir in crates {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name == "arbor-log" || name == "arbor-test-support" || !dir.join("src").is_dir() {
            continue;
        }
        for file in rust_files(&dir.join("src"))? {
            let rel = file.strip_prefix(root).unwrap_or(&file).to_string_lossy().replace('\\', "/");
            if rel.ends_with("/tests.rs") || rel.contains("/tests/") {
                continue;
            }
            let allowed: Vec<&str> =
                ALLOWED.iter().filter(|(p, _, _)| *p == rel).flat_map(|(_, w, _)| w.iter().copied()).collect();
            let text = fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            for (line, word) in refused(&text, &words) {
                if !allowed.contains(&word.as_str()) {
                    problems.push(format!(
                        "{rel}:{line}: the literal \"{word}\" is an entry type or a role; use arbor_log::EntryType / Role (or MessageView)"
                    ));
                }
            }
        }
    }
    Ok(problems)
}

/// The (line, word) of every vocabulary literal in `source` outside test
/// code that is not a field name.
pub fn refused(source: &str, words: &[String]) -> Vec<(usize, String)> {
    let code = code_only(source);
    let tests = test_regions(&code);
    let mut out = Vec::new();
    for (at, end, text) in string_literals(source) {
        if !words.contains(&text) || tests.iter().any(|&(a, b)| a <= at && at < b) {
            continue;
        }
        if is_field_name(&code[..at], &code[end..]) {
            continue;
        }
        out.push((source[..at].matches('\n').count() + 1, text));
    }
    out
}

/// True when a literal between `before` and `after` is a JSON field name.
fn is_field_name(before: &str, after: &str) -> bool {
    let after = after.trim_start();
    if after.starts_with(':') && !after.starts_with("::") {
        return true;
    }
    let before = before.trim_end();
    ["get(", "get_mut(", "insert(", "remove(", "contains_key(", "["].iter().any(|p| before.ends_with(p))
}

/// The byte ranges of `#[cfg(test)]` items in `code` (comments and strings
/// already blanked): from the attribute to the item's closing brace or `;`.
fn test_regions(code: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (at, attr) in code.match_indices("#[cfg(test)]") {
        let body = &code[at + attr.len()..];
        let Some(open) = body.find(['{', ';']) else { continue };
        let start = at + attr.len() + open;
        if body.as_bytes()[open] == b';' {
            out.push((at, start + 1));
            continue;
        }
        let mut depth = 0usize;
        let mut end = code.len();
        for (i, c) in code[start..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = start + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push((at, end));
    }
    out
}

/// Every string literal of `source` outside comments: (byte start, byte end,
/// its text between the quotes, escapes left as written).
fn string_literals(source: &str) -> Vec<(usize, usize, String)> {
    let chars: Vec<char> = source.chars().collect();
    let offsets: Vec<usize> = source.char_indices().map(|(i, _)| i).chain([source.len()]).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let prev_ident = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if c == '/' && next == Some('/') {
            i = chars[i..].iter().position(|&c| c == '\n').map_or(chars.len(), |p| i + p);
        } else if c == '/' && next == Some('*') {
            i = block_comment_end(&chars, i);
        } else if c == '"' || (c == 'r' && matches!(next, Some('"' | '#')) && !prev_ident) {
            let end = string_end(&chars, i);
            let open = chars[i..end].iter().position(|&c| c == '"').map_or(end, |p| i + p + 1);
            let close = chars[..end].iter().rposition(|&c| c == '"').unwrap_or(open).max(open);
            out.push((offsets[i], offsets[end], chars[open..close].iter().collect()));
            i = end;
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            i = char_end(&chars, i);
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> Vec<String> {
        ["assistant", "compaction", "label", "message", "user"].iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_words_come_from_the_vocabulary_macro() {
        let src = "vocabulary! {\n    EntryType, \"entry type\" {\n        /// `message`.\n        Message = \"message\",\n        BranchSummary = \"branch_summary\",\n    }\n}\nlet x = \"no\",\n";
        assert_eq!(words(src), ["branch_summary", "message"]);
        let root = crate::workspace_root().unwrap_or_default();
        let real = words(&fs::read_to_string(root.join("crates/arbor-log/src/vocab.rs")).unwrap_or_default());
        for w in ["message", "compaction", "branch_summary", "assistant", "toolResult", "user"] {
            assert!(real.iter().any(|r| r == w), "{w} missing from {real:?}");
        }
    }

    #[test]
    fn role_and_type_literals_are_refused() {
        let bad = r##"
            fn f(m: &Value, t: &str) -> bool {
                if t == "compaction" { return true; }
                match m["role"].as_str() { Some("assistant") => true, Some(r#"user"#) => false, _ => false }
            }
            fn g(v: &mut Map) { v.insert("type".into(), "label".into()); }
        "##;
        let found: Vec<(usize, String)> = refused(bad, &vocab());
        let words: Vec<&str> = found.iter().map(|(_, w)| w.as_str()).collect();
        assert_eq!(words, ["compaction", "assistant", "user", "label"]);
        assert_eq!(found[0].0, 3);
        assert_eq!(found[3].0, 6);
        let wide = "// ←→\nfn g() -> Value { json!({\"role\": \"user\"}) }\n";
        assert_eq!(refused(wide, &vocab()), [(2, "user".to_owned())]);
    }

    #[test]
    fn field_names_comments_and_tests_pass() {
        let good = r##"
            // "assistant" in a comment
            /// A `"user"` message.
            fn f(v: &Value, m: &mut Map) {
                let _ = v.get("message");
                let _ = v["label"];
                m.insert("label".into(), json!({"message": {"role": Role::User.as_str()}}));
                let _ = "user-agent";
            }
            fn g() -> Value { json!({"rôle": {"message": 1}}) } // → after a wide character, a key
            #[cfg(test)]
            mod tests {
                fn t() { assert_eq!(role, "assistant"); }
            }
        "##;
        assert_eq!(refused(good, &vocab()), Vec::<(usize, String)>::new());
    }

    #[test]
    fn the_check_reads_the_crates_and_honours_the_allow_list() {
        let dir = std::env::temp_dir().join(format!("xtask-tidy-vocab-{}", std::process::id()));
        let write = |rel: &str, text: &str| {
            let p = dir.join(rel);
            fs::create_dir_all(p.parent().unwrap_or(&dir)).ok();
            fs::write(&p, text).ok();
        };
        write("crates/arbor-log/src/vocab.rs", "        User = \"user\",\n        Assistant = \"assistant\",\n        Message = \"message\",\n        Compaction = \"compaction\",\n        Label = \"label\",\n        A = \"a\",\n        B = \"b\",\n        C = \"c\",\n        D = \"d\",\n        E = \"e\",\n");
        write("crates/arbor-log/src/entry.rs", "const M: &str = \"message\";\n");
        write("crates/arbor-test-support/src/lib.rs", "const M: &str = \"message\";\n");
        write("crates/arbor-tree/src/a.rs", "fn f(r: &str) -> bool { r == \"assistant\" }\n");
        write("crates/arbor-tree/src/b/tests.rs", "const U: &str = \"user\";\n");
        write(
            "crates/arbor-interop/src/import/claude.rs",
            "fn f(t: &str) -> bool { t == \"user\" || t == \"compaction\" }\n",
        );
        let problems = check(&dir).unwrap_or_default();
        fs::remove_dir_all(&dir).ok();
        assert_eq!(
            problems,
            [
                "crates/arbor-interop/src/import/claude.rs:1: the literal \"compaction\" is an entry type or a role; use arbor_log::EntryType / Role (or MessageView)",
                "crates/arbor-tree/src/a.rs:1: the literal \"assistant\" is an entry type or a role; use arbor_log::EntryType / Role (or MessageView)",
            ]
        );
    }
}
