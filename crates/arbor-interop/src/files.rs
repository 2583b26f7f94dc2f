//! The files a branch's tool calls touched: pi's own tools through
//! `arbor-context`'s extraction (the one summaries use), plus the file tools
//! of the agents Arbor imports from, whose calls keep their own names.

use arbor_context::summary::{compute_file_lists, extract_file_ops_from_message, FileOps};
use arbor_log::{MessageView, Role};
use serde_json::Value;

/// Adds the files an assistant message's tool calls read, wrote or edited.
pub(crate) fn add_file_ops(message: &Value, ops: &mut FileOps) {
    extract_file_ops_from_message(message, ops);
    let view = MessageView::new(message);
    if view.role() != Some(Role::Assistant) {
        return;
    }
    for call in view.tool_calls() {
        let args = call.arguments.unwrap_or(&Value::Null);
        let path = args.get("file_path").or_else(|| args.get("notebook_path")).and_then(Value::as_str).unwrap_or("");
        match call.name.unwrap_or("") {
            // Claude Code.
            "Read" if !path.is_empty() => {
                ops.read.insert(path);
            }
            "Write" if !path.is_empty() => {
                ops.written.insert(path);
            }
            "Edit" | "MultiEdit" | "NotebookEdit" if !path.is_empty() => {
                ops.edited.insert(path);
            }
            // Codex CLI: the files a patch adds, updates or deletes.
            "apply_patch" => {
                let input = args.get("input").or_else(|| args.get("patch")).and_then(Value::as_str).unwrap_or("");
                for line in input.lines() {
                    let file = ["*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "]
                        .iter()
                        .find_map(|p| line.strip_prefix(p));
                    if let Some(f) = file.map(str::trim).filter(|f| !f.is_empty()) {
                        ops.edited.insert(f);
                    }
                }
            }
            _ => {}
        }
    }
}

/// `(read, modified)`: the files read and not changed, and the files changed, sorted.
pub(crate) fn file_lists(ops: &FileOps) -> (Vec<String>, Vec<String>) {
    compute_file_lists(ops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pi_claude_and_codex_file_tools() {
        let m = json!({"role":"assistant","content":[
            {"type":"toolCall","id":"1","name":"read","arguments":{"path":"a.rs"}},
            {"type":"toolCall","id":"2","name":"Read","arguments":{"file_path":"b.rs"}},
            {"type":"toolCall","id":"3","name":"Edit","arguments":{"file_path":"b.rs"}},
            {"type":"toolCall","id":"4","name":"apply_patch","arguments":{"input":"*** Begin Patch\n*** Update File: c.rs\n@@\n*** Add File: d.rs\n*** End Patch\n"}},
            {"type":"toolCall","id":"5","name":"Bash","arguments":{"command":"ls"}}
        ]});
        let mut ops = FileOps::new();
        add_file_ops(&m, &mut ops);
        assert_eq!(file_lists(&ops), (vec!["a.rs".to_owned()], vec!["b.rs".to_owned(), "c.rs".into(), "d.rs".into()]));
    }
}
