//! Every key of `arbor chat` beside pi's default binding (pi's
//! `docs/keybindings.md`): what `/hotkeys` lists and docs/cli.md's table
//! says (a test keeps them together).

/// One key: Arbor's, pi's default for the same action (`—` where pi has none), and what it does.
pub struct Hotkey {
    /// Arbor's key(s).
    pub arbor: &'static str,
    /// pi's default binding.
    pub pi: &'static str,
    /// What it does.
    pub what: &'static str,
}

const fn key(arbor: &'static str, pi: &'static str, what: &'static str) -> Hotkey {
    Hotkey { arbor, pi, what }
}

/// The chat's keys, in the order `/hotkeys` lists them.
pub const HOTKEYS: &[Hotkey] = &[
    key("Enter", "enter", "send the prompt; while a reply streams, queue it"),
    key("Shift+Enter, Alt+Enter, Ctrl+J", "shift+enter", "new line in the prompt"),
    key("← / →, Ctrl+B / Ctrl+F", "left / right, ctrl+b / ctrl+f", "move by character"),
    key(
        "Ctrl+← / Ctrl+→, Alt+← / Alt+→, Alt+B / Alt+F",
        "ctrl+left / ctrl+right, alt+left / alt+right, alt+b / alt+f",
        "move by word",
    ),
    key("Home / End, Ctrl+A / Ctrl+E", "home / end, ctrl+a / ctrl+e", "start / end of the line"),
    key("Backspace", "backspace", "delete the character before the cursor"),
    key("Delete, Ctrl+D", "delete, ctrl+d", "delete the character under the cursor (Ctrl+D on an empty prompt quits)"),
    key("Ctrl+W, Alt+Backspace", "ctrl+w, alt+backspace", "delete the word before the cursor"),
    key("Alt+D, Alt+Delete", "alt+d, alt+delete", "delete the word after the cursor"),
    key("Ctrl+U", "ctrl+u", "delete to the start of the line"),
    key("Ctrl+K", "ctrl+k", "delete to the end of the line"),
    key("Ctrl+Y", "ctrl+y", "paste the text deleted last"),
    key("↑ / ↓", "up / down", "earlier prompts, on an empty prompt"),
    key("Tab", "tab", "complete a command name"),
    key("PageUp / PageDown", "pageUp / pageDown", "scroll the conversation"),
    key("Esc", "escape", "abort the reply, summary, compaction or shell command running (queued prompts come back)"),
    key("Esc Esc", "escape escape", "on an empty prompt: the tree (doubleEscapeAction tree) or fork selector"),
    key("Ctrl+C", "ctrl+c", "clear the prompt; twice within 500 ms: quit; while something runs: abort it"),
    key("Ctrl+D", "ctrl+d", "quit, on an empty prompt"),
    key("Ctrl+L", "ctrl+l", "the model selector"),
    key("Ctrl+P / Shift+Ctrl+P", "ctrl+p / shift+ctrl+p", "the next / previous model"),
    key("Shift+Tab", "shift+tab", "the next thinking level"),
    key("Ctrl+T", "ctrl+t", "collapse / expand thinking"),
    key("Ctrl+O", "ctrl+o", "expand / collapse tool output, branch summaries and compactions"),
    key("Ctrl+G", "ctrl+g", "edit the prompt in $VISUAL or $EDITOR"),
    key("Alt+↑", "alt+up", "while a reply streams: the queued prompts back into the prompt"),
    key("(paste)", "(paste)", "pasted text goes into the prompt whole, newlines kept, never sent by itself"),
];

/// pi's keys the chat does not have, and why.
pub const NOT_IN_ARBOR: &[Hotkey] = &[
    key("—", "ctrl+z", "suspend: not bound (run the chat under your shell's job control instead)"),
    key("—", "ctrl+v", "paste an image: the chat sends text only"),
    key("—", "ctrl+-, alt+y, ctrl+], ctrl+alt+]", "undo, yank-pop and jump to a character: not bound"),
];

/// `/hotkeys`: one line per key.
pub fn lines() -> Vec<String> {
    let mut out = vec![format!("{:<34} {:<24} {}", "key", "pi's", "what")];
    for k in HOTKEYS.iter().chain(NOT_IN_ARBOR) {
        out.push(format!("{:<34} {:<24} {}", k.arbor, k.pi, k.what));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/cli.md's key table lists every key, with pi's beside it.
    #[test]
    fn the_docs_list_every_key() {
        let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/cli.md")).unwrap();
        for k in HOTKEYS.iter().chain(NOT_IN_ARBOR) {
            let row = format!("| {} | {} |", k.arbor, k.pi);
            assert!(docs.contains(&row), "docs/cli.md has no row starting {row:?}");
        }
    }
}
