//! The chat's dialogs: the model selector (Ctrl+L, `/model`), `/settings`,
//! `/resume`'s sessions, the external editor (Ctrl+G) and `/copy`.

use std::io::{Read, Write};

use anyhow::{bail, Context as _, Result};
use base64::Engine as _;

use super::core::Chat;
use super::screen::Screen;
use super::select::{pick, Item, Select};
use super::settings::{DoubleEscape, THINKING_LEVELS};
use crate::shared::filter::FilterMode;

/// The most bytes of text the external editor may hand back (4 MiB).
const EDITED_LIMIT: u64 = 4 * 1024 * 1024;

/// Runs `sel` over the chat's terminal and keys.
fn choose(screen: &mut Screen, sel: Select) -> Result<Option<String>> {
    let keys = &screen.keys;
    let mut next = |wait| keys.next(wait);
    pick(&mut screen.term, &mut next, sel)
}

/// Ctrl+L, `/model`: every configured model; the one picked is switched to (and recorded).
pub(super) fn select_model(chat: &mut Chat, screen: &mut Screen) -> Result<()> {
    let choices = chat.model_choices();
    if choices.is_empty() {
        bail!("No model configured: pi's models.json, the settings' model or /model PROVIDER/MODEL");
    }
    let items = choices.into_iter().map(|(spec, detail)| Item::plain(&spec, &detail)).collect();
    let current = chat.model_name();
    let Some(spec) = choose(screen, Select::new("Select a model", items, Some(&current)))? else { return Ok(()) };
    screen.view.status = Some(chat.model(Some(&spec))?);
    Ok(())
}

/// `/settings`: the thinking level, the tree filter, the double-Escape action
/// and the summary question, for this chat (the files are not rewritten).
pub(super) fn settings(chat: &mut Chat, screen: &mut Screen) -> Result<()> {
    loop {
        let s = &chat.settings;
        let filter = s.tree_filter.name().to_owned();
        let escape = match s.double_escape {
            DoubleEscape::Tree => "tree",
            DoubleEscape::Branch => "fork",
            DoubleEscape::None => "none",
        };
        let items = vec![
            Item {
                label: "Thinking level".into(),
                detail: chat.agent().thinking_level()?.to_owned(),
                value: "thinking".into(),
            },
            Item { label: "Tree filter".into(), detail: filter.clone(), value: "filter".into() },
            Item { label: "Double Escape".into(), detail: escape.to_owned(), value: "escape".into() },
            Item {
                label: "Ask whether to summarize on /tree".into(),
                detail: (!s.skip_summary_prompt).to_string(),
                value: "summary".into(),
            },
        ];
        let Some(which) = choose(screen, Select::new("Settings (for this chat)", items, None))? else { return Ok(()) };
        let (title, values, current): (&str, Vec<&str>, String) = match which.as_str() {
            "thinking" => ("Thinking level", THINKING_LEVELS.to_vec(), chat.agent().thinking_level()?.to_owned()),
            "filter" => ("Tree filter", vec!["default", "no-tools", "user-only", "labeled-only", "all"], filter),
            "escape" => ("Double Escape", vec!["tree", "fork", "none"], escape.to_owned()),
            _ => ("Ask whether to summarize on /tree", vec!["true", "false"], (!s.skip_summary_prompt).to_string()),
        };
        let items = values.iter().map(|v| Item::plain(v, "")).collect();
        let Some(v) = choose(screen, Select::new(title, items, Some(&current)))? else { continue };
        screen.view.status = Some(match which.as_str() {
            "thinking" => chat.thinking(Some(&v))?,
            "filter" => {
                chat.settings.tree_filter = FilterMode::named(&v).unwrap_or_default();
                format!("Tree filter: {v} (for this chat)")
            }
            "escape" => {
                chat.settings.double_escape = match v.as_str() {
                    "tree" => DoubleEscape::Tree,
                    "fork" => DoubleEscape::Branch,
                    _ => DoubleEscape::None,
                };
                format!("Double Escape: {v} (for this chat)")
            }
            _ => {
                chat.settings.skip_summary_prompt = v == "false";
                format!("Ask whether to summarize: {v} (for this chat)")
            }
        });
    }
}

/// `/resume`: the sessions of the current directory, newest first (from the
/// catalog); the one picked is continued in, its model restored.
pub(super) fn resume(chat: &mut Chat, screen: &mut Screen) -> Result<()> {
    let sessions = chat.sessions_here()?;
    if sessions.is_empty() {
        bail!("No session of this directory to resume");
    }
    let items = sessions
        .iter()
        .map(|s| {
            let label = s.name.clone().unwrap_or_else(|| crate::ui::tui::one_line(&s.first_message));
            let file = s.path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            let when = s.modified.get(..16).unwrap_or(&s.modified).replace('T', " ");
            let detail = format!("{} messages · {when} · {file}", s.message_count);
            Item { label, detail, value: s.path.to_string_lossy().into_owned() }
        })
        .collect();
    let current = chat.file().map(|p| p.to_string_lossy().into_owned());
    let Some(path) = choose(screen, Select::new("Resume a session", items, current.as_deref()))? else { return Ok(()) };
    screen.view.status = Some(chat.resume(std::path::Path::new(&path))?);
    screen.view.history.clear();
    Ok(())
}

/// Ctrl+G: the prompt in `$VISUAL` (else `$EDITOR`, else `vi`), and back.
pub(super) fn external_editor(screen: &mut Screen) -> Result<()> {
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|e| !e.trim().is_empty()))
        .unwrap_or_else(|| "vi".to_owned());
    let mut file = tempfile::Builder::new().prefix("arbor-prompt-").suffix(".md").tempfile()?;
    file.write_all(screen.view.input.as_bytes())?;
    file.flush()?;
    // The editor gets the terminal: the key reader stops, raw mode and the alternate screen go.
    screen.keys.pause();
    crossterm::terminal::disable_raw_mode()?;
    crossterm::execute!(std::io::stderr(), crossterm::terminal::LeaveAlternateScreen)?;
    let status =
        std::process::Command::new("sh").arg("-c").arg(format!("{editor} \"$1\"")).arg("sh").arg(file.path()).status();
    crossterm::execute!(std::io::stderr(), crossterm::terminal::EnterAlternateScreen)?;
    crossterm::terminal::enable_raw_mode()?;
    screen.keys.resume();
    screen.term.clear()?;
    let status = status.with_context(|| format!("cannot run the editor {editor:?}"))?;
    if !status.success() {
        bail!("the editor {editor:?} failed ({status}); the prompt is unchanged");
    }
    let mut text = String::new();
    std::fs::File::open(file.path())?.take(EDITED_LIMIT).read_to_string(&mut text)?;
    let text = text.strip_suffix('\n').unwrap_or(&text);
    screen.view.set_input(text);
    Ok(())
}

/// `/copy`: the last reply to the clipboard: written to the terminal as an
/// OSC 52 sequence (terminals and tmux pass it to the clipboard), and
/// handed to `wl-copy`, `xclip` or `pbcopy` when one is there.
pub(super) fn copy(chat: &Chat) -> Result<String> {
    let text = chat.last_reply_text()?;
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    let mut err = std::io::stderr();
    write!(err, "\x1b]52;c;{encoded}\x07")?;
    err.flush()?;
    let var = |v: &str| std::env::var_os(v).is_some_and(|x| !x.is_empty());
    let tools: [(&str, &[&str], bool); 3] = [
        ("wl-copy", &[], var("WAYLAND_DISPLAY")),
        ("xclip", &["-selection", "clipboard"], var("DISPLAY")),
        ("pbcopy", &[], cfg!(target_os = "macos")),
    ];
    for (tool, args, _) in tools.into_iter().filter(|t| t.2) {
        let child = std::process::Command::new(tool)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if let Ok(mut c) = child {
            if let Some(mut stdin) = c.stdin.take() {
                let _ = stdin.write_all(text.as_bytes());
            }
            let _ = c.wait();
            break;
        }
    }
    Ok(format!("Copied the last reply ({} characters)", text.chars().count()))
}
