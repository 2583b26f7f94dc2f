//! A tool call as a person reads it: the tool and what it was asked (`$ cmd`
//! for a shell, the path for a file tool, an edit as a diff), for pi's tools
//! and for the tools of the agents Arbor imports from (Claude Code, Codex).

use std::time::Duration;

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use super::stream::{shape, Cuts, Src};

/// What a call shows beyond its one line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Detail {
    /// Nothing: the line says it all.
    None,
    /// A shell command longer than its line.
    Command(String),
    /// A file's new content (`write`).
    Content(String),
    /// Edits as diffs, one per replacement.
    Diff(Vec<Vec<DiffLine>>),
    /// A patch as the tool got it (`apply_patch`).
    Patch(String),
    /// Any other tool's arguments, as pretty JSON.
    Json(String),
}

/// One line of an edit's diff.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DiffLine {
    /// `-` removed, `+` added, ` ` kept.
    pub sign: char,
    pub text: String,
}

/// A call seen by a person: the tool, one line of what it does, and more.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallView {
    /// The tool's name as the model called it.
    pub tool: String,
    /// `$ ls -la` for a shell, the path (with a line range) for a file tool,
    /// the pattern and folder for a search; empty when nothing fits.
    pub line: String,
    pub detail: Detail,
    /// The argument whose text the detail is, whole (a command, a file's
    /// content, a patch): what a writer reads whole when the entry's
    /// preview cut it.
    pub key: Option<&'static str>,
}

fn str_arg<'a>(args: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| args.get(*k).and_then(Value::as_str))
}

/// The first line of `s`, cut at `max` characters (with `…` when anything was left out).
pub(crate) fn one_line(s: &str, max: usize) -> String {
    let mut lines = s.trim().lines();
    let first = lines.next().unwrap_or("");
    let cut: String = first.chars().take(max).collect();
    if cut.len() < first.len() || lines.next().is_some() {
        format!("{}…", cut.trim_end())
    } else {
        cut
    }
}

/// The command of a shell call, and the argument it is when it is one string.
fn command_of(args: &Value) -> Option<(String, Option<&'static str>)> {
    let key = if args.get("command").is_some() { "command" } else { "cmd" };
    match args.get(key) {
        Some(Value::String(c)) => Some((c.clone(), Some(key))),
        // Codex: `["bash", "-lc", "ls"]` is the command `ls`.
        Some(Value::Array(parts)) => {
            let words: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
            match words.as_slice() {
                [sh, flag, script] if sh.ends_with("sh") && flag.starts_with('-') => Some(((*script).to_owned(), None)),
                _ => Some((words.join(" "), None)),
            }
        }
        _ => None,
    }
}

/// Describes a tool call.
pub(crate) fn call_view(name: &str, args: &Value) -> CallView {
    let path = str_arg(args, &["path", "file_path", "notebook_path", "filePath"]).unwrap_or("");
    let view = |line: String, detail: Detail| CallView { tool: name.to_owned(), line, detail, key: None };
    match name {
        "bash" | "Bash" | "shell" | "local_shell" | "exec_command" => match command_of(args) {
            Some((cmd, key)) => {
                let line = format!("$ {}", one_line(&cmd, 200));
                let more = cmd.trim().lines().count() > 1 || cmd.chars().count() > 200;
                CallView { key, ..view(line, if more { Detail::Command(cmd) } else { Detail::None }) }
            }
            None => view(String::new(), json_detail(args)),
        },
        "read" | "Read" => {
            let offset = args.get("offset").and_then(Value::as_u64);
            let limit = args.get("limit").and_then(Value::as_u64);
            let range = match (offset, limit) {
                (None, None) => String::new(),
                (o, Some(l)) => format!(":{}-{}", o.unwrap_or(1), o.unwrap_or(1) + l.saturating_sub(1)),
                (Some(o), None) => format!(":{o}-"),
            };
            view(format!("{path}{range}"), Detail::None)
        }
        "write" | "Write" => {
            let content = str_arg(args, &["content"]).unwrap_or("");
            let lines = content.lines().count();
            let line = format!("{path} ({lines} line{})", if lines == 1 { "" } else { "s" });
            CallView { key: Some("content"), ..view(line, Detail::Content(content.into())) }
        }
        "edit" | "Edit" | "MultiEdit" => view(path.to_owned(), Detail::Diff(edits(args))),
        "apply_patch" => {
            let key = ["input", "patch"].into_iter().find(|k| args.get(*k).and_then(Value::as_str).is_some());
            let patch = key.and_then(|k| str_arg(args, &[k])).unwrap_or("");
            let files: Vec<&str> = patch
                .lines()
                .filter_map(|l| {
                    ["*** Add File: ", "*** Update File: ", "*** Delete File: "].iter().find_map(|p| l.strip_prefix(p))
                })
                .collect();
            CallView { key, ..view(files.join(", "), Detail::Patch(patch.to_owned())) }
        }
        "grep" | "Grep" | "find" | "Glob" | "glob" => {
            let pattern = str_arg(args, &["pattern", "query", "glob"]).unwrap_or("");
            let line = if path.is_empty() { pattern.to_owned() } else { format!("{pattern} in {path}") };
            view(one_line(&line, 200), Detail::None)
        }
        "ls" | "LS" => view(if path.is_empty() { ".".into() } else { path.to_owned() }, Detail::None),
        _ if !path.is_empty() => view(path.to_owned(), json_detail(args)),
        _ => view(String::new(), json_detail(args)),
    }
}

/// [`call_view`] of a call whose arguments are at `pointer` of an entry
/// whose preview may have cut them (`cuts`): a file's content read whole
/// has its lines counted whole.
pub(crate) fn call_view_in(
    name: &str,
    args: &Value,
    pointer: Option<String>,
    cuts: &dyn Cuts,
) -> std::io::Result<CallView> {
    let mut v = call_view(name, args);
    if let (Detail::Content(held), Some(key)) = (&v.detail, v.key) {
        if let Src::Whole(w) = Src::of(cuts, pointer.map(|p| format!("{p}/{key}")), held) {
            let s = shape(w.as_ref())?;
            let lines = s.newlines + usize::from(s.end_newlines == s.len && s.len > 0);
            let path = str_arg(args, &["path", "file_path", "notebook_path", "filePath"]).unwrap_or("");
            v.line = format!("{path} ({lines} line{})", if lines == 1 { "" } else { "s" });
        }
    }
    Ok(v)
}

fn json_detail(args: &Value) -> Detail {
    match args {
        Value::Null => Detail::None,
        Value::Object(m) if m.is_empty() => Detail::None,
        a => Detail::Json(serde_json::to_string_pretty(a).unwrap_or_default()),
    }
}

/// The replacements of an edit call: pi's `oldText`/`newText` (or a list of
/// them in `edits`), Claude Code's `old_string`/`new_string` (or `edits`).
fn edits(args: &Value) -> Vec<Vec<DiffLine>> {
    let pair = |v: &Value| {
        let old = str_arg(v, &["oldText", "old_string", "old_str", "old"])?;
        let new = str_arg(v, &["newText", "new_string", "new_str", "new"]).unwrap_or("");
        Some(diff_lines(old, new))
    };
    match args.get("edits").and_then(Value::as_array) {
        Some(list) => list.iter().filter_map(pair).collect(),
        None => pair(args).into_iter().collect(),
    }
}

/// The line diff of `old` and `new` (a slow diff gives up after 50 ms and
/// shows the rest as removed and added).
pub(crate) fn diff_lines(old: &str, new: &str) -> Vec<DiffLine> {
    let diff = TextDiff::configure().timeout(Duration::from_millis(50)).diff_lines(old, new);
    diff.iter_all_changes()
        .map(|c| DiffLine {
            sign: match c.tag() {
                ChangeTag::Delete => '-',
                ChangeTag::Insert => '+',
                ChangeTag::Equal => ' ',
            },
            text: c.value().trim_end_matches(['\n', '\r']).to_owned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shell_calls_read_as_commands_and_file_tools_as_paths() {
        assert_eq!(call_view("bash", &json!({"command": "ls -la"})).line, "$ ls -la");
        assert_eq!(call_view("shell", &json!({"command": ["bash", "-lc", "cargo test"]})).line, "$ cargo test");
        assert_eq!(call_view("read", &json!({"path": "src/a.rs", "offset": 10, "limit": 5})).line, "src/a.rs:10-14");
        assert_eq!(call_view("Read", &json!({"file_path": "/x/b.rs"})).line, "/x/b.rs");
        let long = call_view("bash", &json!({"command": "a\nb"}));
        assert_eq!((long.line.as_str(), long.detail), ("$ a…", Detail::Command("a\nb".into())));
    }

    #[test]
    fn edits_are_diffs() {
        let v = call_view("edit", &json!({"path": "a.rs", "oldText": "x\ny\nz", "newText": "x\nY\nz"}));
        assert_eq!(v.line, "a.rs");
        let Detail::Diff(d) = v.detail else { panic!("{v:?}") };
        let signs: String = d[0].iter().map(|l| l.sign).collect();
        assert_eq!(signs, " -+ ");
        let multi = call_view(
            "MultiEdit",
            &json!({"file_path": "b", "edits": [{"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "d"}]}),
        );
        assert!(matches!(multi.detail, Detail::Diff(ref d) if d.len() == 2));
    }
}
