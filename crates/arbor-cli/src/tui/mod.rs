//! `arbor tui`: pi's interactive `/tree` flow (spec 5.4) over a session file.
//!
//! The selector itself is a pure state machine ([`selector`]) drawn by [`view`];
//! this module owns the terminal (raw mode and the alternate screen, restored on
//! exit and on panic), writes labels through `arbor-tree`, and navigates through
//! `arbor navigate`'s code path so summaries, hooks and Ctrl-C behave the same.
//! The screen is drawn on stderr, so stdout carries only the editor text left
//! by a navigation (`arbor tui > prompt.txt` works).
//!
//! `arbor tui --fork` opens the /branch message selector ([`fork_selector`]) instead and
//! hands the chosen message to `arbor fork --before`'s code path, whose output (the new
//! session's path and the editor text) goes to stdout.

mod fork_selector;
mod keys;
mod selector;
mod view;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use anyhow::{bail, Context as _, Result};
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use arbor_tree::{paths, FileStore, OpenMode, Session, SessionOptions};

use crate::agent_cmds::ModelArgs;
pub(crate) use fork_selector::one_line;
use fork_selector::ForkOutcome;
pub(crate) use fork_selector::ForkSelector;
pub use selector::FilterMode;
use selector::Outcome;
pub(crate) use selector::TreeSelector;
#[cfg(test)]
pub(crate) use view::buffer_text;

/// The choices offered after Enter (spec 5.4).
const CHOICES: [&str; 3] = ["No summary", "Summarize", "Summarize with custom prompt"];

/// True while the terminal is in raw mode on the alternate screen.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Puts the terminal back on drop: leaves raw mode and the alternate screen.
pub(crate) struct TerminalGuard;

impl TerminalGuard {
    pub(crate) fn enter() -> Result<TerminalGuard> {
        install_panic_hook();
        terminal::enable_raw_mode().context("cannot switch the terminal to raw mode (is stdin a terminal?)")?;
        let guard = TerminalGuard;
        ACTIVE.store(true, Ordering::SeqCst);
        crossterm::execute!(io::stderr(), EnterAlternateScreen).context("cannot enter the alternate screen")?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

fn restore_terminal() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let _ = crossterm::execute!(io::stderr(), LeaveAlternateScreen, crossterm::cursor::Show);
    let _ = terminal::disable_raw_mode();
}

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            previous(info);
        }));
    });
}

/// What the user decided in one run of the selector.
pub(crate) enum Decision {
    Quit,
    Navigate { id: String, summarize: bool, instructions: Option<String> },
}

/// Screens after the tree itself.
enum Screen {
    Tree,
    Choice { id: String, index: usize },
    Prompt { id: String, value: String },
}

pub(crate) type Term = Terminal<CrosstermBackend<io::Stderr>>;

/// A selector over `session` (paths shortened with the home directory) and the session's real leaf.
pub(crate) fn selector_over(
    session: &Session,
    height: u16,
    initial: Option<&str>,
    filter: FilterMode,
) -> (TreeSelector, Option<String>) {
    let home = crate::cli::home();
    (TreeSelector::new(session, height, initial, filter, home.as_deref()), session.leaf_id().map(str::to_owned))
}

/// The session to open and the entry to select: `file` and `at` as given;
/// without a file, what the session picker picks (`None`: the user left it),
/// or, without a terminal for it, the most recent session of the cwd.
fn resolve_file(file: Option<PathBuf>, at: Option<String>) -> Result<Option<(PathBuf, Option<String>)>> {
    if let Some(f) = file {
        return Ok(Some((f, at)));
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let cwd = cwd.to_string_lossy().into_owned();
    let root = paths::sessions_root();
    let dir = paths::session_dir_for(&root, &cwd);
    if crate::picker::available() {
        return match crate::picker::pick(&root, &cwd)? {
            crate::picker::Picked::Session { path, at: hit } => Ok(Some((path, at.or(hit)))),
            crate::picker::Picked::Left => Ok(None),
            crate::picker::Picked::NoSessions => bail!("no session for {cwd} in {}", dir.display()),
        };
    }
    match arbor_tree::find_most_recent_session(&FileStore, &dir)? {
        Some(p) => Ok(Some((p, at))),
        None => bail!("no session for {cwd} in {}", dir.display()),
    }
}

fn save_label(file: &Path, opts: SessionOptions, id: &str, label: Option<&str>) -> Result<String> {
    let mut s = Session::open(file, OpenMode::Write, opts)?;
    s.append_label_change(id, label).with_context(|| file.display().to_string())?;
    Ok(match label {
        Some(l) => format!("Label set: {l}"),
        None => "Label cleared".to_owned(),
    })
}

/// Where the tree selector gets its session and writes labels: a file
/// (`arbor tui`) or the chat's open session (`arbor chat`).
pub(crate) trait TreeHost {
    /// A selector over the session as it is now, and the session's real leaf.
    fn selector(
        &mut self,
        height: u16,
        initial: Option<&str>,
        filter: FilterMode,
    ) -> Result<(TreeSelector, Option<String>)>;
    /// Writes a label change; the answer is the status line.
    fn save_label(&mut self, id: &str, label: Option<&str>) -> Result<String>;
}

/// `arbor tui`'s host: the file, reopened read-only for each look.
struct FileHost<'a> {
    file: &'a Path,
    options: &'a dyn Fn() -> SessionOptions,
}

impl TreeHost for FileHost<'_> {
    fn selector(
        &mut self,
        height: u16,
        initial: Option<&str>,
        filter: FilterMode,
    ) -> Result<(TreeSelector, Option<String>)> {
        let session = Session::open(self.file, OpenMode::ReadOnly, (self.options)())?;
        Ok(selector_over(&session, height, initial, filter))
    }

    fn save_label(&mut self, id: &str, label: Option<&str>) -> Result<String> {
        save_label(self.file, (self.options)(), id, label)
    }
}

/// The next terminal event: `event::read` for `arbor tui`, a channel for `arbor chat`.
pub(crate) type NextEvent<'a> = &'a mut dyn FnMut() -> Result<Event>;

/// The next event as a key press; `None` (to redraw) after a resize, which
/// `resized` is told the new height of, and for anything else.
fn read_key(next: NextEvent<'_>, resized: impl FnOnce(u16)) -> Result<Option<KeyEvent>> {
    Ok(match next()? {
        Event::Key(key) if key.kind != KeyEventKind::Release => Some(key),
        Event::Resize(_, rows) => {
            resized(rows);
            None
        }
        _ => None,
    })
}

/// Runs the selector until the user quits or picks a point to navigate to.
/// With `skip_prompt` (pi's `branchSummary.skipPrompt`) Enter moves without a summary.
pub(crate) fn select(
    term: &mut Term,
    host: &mut dyn TreeHost,
    next: NextEvent<'_>,
    initial: Option<&str>,
    filter: FilterMode,
    mut status: Option<String>,
    skip_prompt: bool,
) -> Result<Decision> {
    let height = term.size().map(|s| s.height).unwrap_or(24);
    let (mut sel, real_leaf) = host.selector(height, initial, filter)?;
    let mut screen = Screen::Tree;
    loop {
        term.draw(|f| {
            let area = f.area();
            let buf = f.buffer_mut();
            match &screen {
                Screen::Tree => view::draw_selector(&sel, status.as_deref(), area, buf),
                Screen::Choice { index, .. } => view::draw_choice("Summarize branch?", &CHOICES, *index, area, buf),
                Screen::Prompt { value, .. } => {
                    view::draw_prompt("Custom summarization instructions", value, area, buf)
                }
            }
        })?;
        let Some(key) = read_key(next, |rows| sel.set_terminal_height(rows))? else { continue };
        screen = match screen {
            Screen::Tree => {
                let Some(input) = keys::decode(&key) else { continue };
                status = None;
                match sel.handle(input) {
                    Outcome::None => Screen::Tree,
                    Outcome::Cancel => return Ok(Decision::Quit),
                    Outcome::LabelChanged(id, label) => {
                        status = Some(match host.save_label(&id, label.as_deref()) {
                            Ok(s) => s,
                            Err(e) => format!("Error: {e:#}"),
                        });
                        Screen::Tree
                    }
                    Outcome::Select(id) => {
                        if sel.is_leaf(&id) || real_leaf.as_deref() == Some(id.as_str()) {
                            status = Some("Already at this point".to_owned());
                            Screen::Tree
                        } else if skip_prompt {
                            return Ok(Decision::Navigate { id, summarize: false, instructions: None });
                        } else {
                            Screen::Choice { id, index: 0 }
                        }
                    }
                }
            }
            Screen::Choice { id, index } => match choice_key(&key, index) {
                ChoiceKey::Move(i) => Screen::Choice { id, index: i },
                ChoiceKey::Back => {
                    // pi re-opens the tree at this entry with the filter from the settings.
                    sel = host.selector(height, Some(&id), filter)?.0;
                    Screen::Tree
                }
                ChoiceKey::Pick(0) => return Ok(Decision::Navigate { id, summarize: false, instructions: None }),
                ChoiceKey::Pick(1) => return Ok(Decision::Navigate { id, summarize: true, instructions: None }),
                ChoiceKey::Pick(_) => Screen::Prompt { id, value: String::new() },
            },
            Screen::Prompt { id, mut value } => match key.code {
                KeyCode::Esc => Screen::Choice { id, index: 2 },
                KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => Screen::Choice { id, index: 2 },
                KeyCode::Enter => {
                    let text = value.trim().to_owned();
                    return Ok(Decision::Navigate {
                        id,
                        summarize: true,
                        instructions: (!text.is_empty()).then_some(text),
                    });
                }
                KeyCode::Backspace => {
                    value.pop();
                    Screen::Prompt { id, value }
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    value.push(c);
                    Screen::Prompt { id, value }
                }
                _ => Screen::Prompt { id, value },
            },
        };
    }
}

enum ChoiceKey {
    Move(usize),
    Back,
    Pick(usize),
}

fn choice_key(key: &KeyEvent, index: usize) -> ChoiceKey {
    let n = CHOICES.len();
    match key.code {
        KeyCode::Up => ChoiceKey::Move((index + n - 1) % n),
        KeyCode::Down => ChoiceKey::Move((index + 1) % n),
        KeyCode::Enter => ChoiceKey::Pick(index),
        KeyCode::Esc => ChoiceKey::Back,
        KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => ChoiceKey::Back,
        _ => ChoiceKey::Move(index),
    }
}

/// `arbor tui [FILE] [--at ID]`: browse the tree (from entry `at`), label entries, and navigate.
pub fn run(
    out: &mut dyn Write,
    file: Option<PathBuf>,
    at: Option<String>,
    filter: FilterMode,
    model: &ModelArgs,
    options: &dyn Fn() -> SessionOptions,
) -> Result<ExitCode> {
    let Some((file, at)) = resolve_file(file, at)? else { return Ok(ExitCode::SUCCESS) };
    {
        let s = Session::open(&file, OpenMode::ReadOnly, options())?;
        crate::cli::print_diagnostics(&file, s.diagnostics());
        if s.get_tree().is_empty() {
            writeln!(out, "No entries in session")?;
            return Ok(ExitCode::SUCCESS);
        }
        if let Some(id) = &at {
            if s.get_entry(id).is_none() {
                bail!("{}: Entry {id} not found", file.display());
            }
        }
    }
    // Shown above: navigations below must not print them again.
    let model = &ModelArgs { diagnostics_shown: true, ..model.clone() };
    let mut initial: Option<String> = at;
    let mut status: Option<String> = None;
    loop {
        let decision = {
            let _guard = TerminalGuard::enter()?;
            let mut term = Terminal::new(CrosstermBackend::new(io::stderr()))?;
            term.clear()?;
            let mut host = FileHost { file: &file, options };
            let mut next = || Ok(event::read()?);
            select(&mut term, &mut host, &mut next, initial.as_deref(), filter, status.take(), false)?
        };
        let Decision::Navigate { id, summarize, instructions } = decision else {
            return Ok(ExitCode::SUCCESS);
        };
        let escape = summarize.then(|| {
            eprintln!("Summarizing branch... (Esc or Ctrl+C to cancel)");
            EscapeWatch::start()
        });
        let mut json = Vec::new();
        let result = crate::agent_cmds::navigate(
            &mut json,
            &file,
            &id,
            summarize,
            instructions,
            false,
            None,
            model,
            options(),
            true,
            escape.as_ref().map(|w| w.pressed.clone()),
        );
        drop(escape);
        let r: serde_json::Value = match result {
            Ok(_) => serde_json::from_slice(&json).context("navigate printed bad JSON")?,
            Err(e) => {
                status = Some(format!("Error: {e:#}"));
                initial = Some(id);
                continue;
            }
        };
        if r["aborted"] == true {
            status = Some("Branch summarization cancelled".to_owned());
            initial = Some(id);
            continue;
        }
        if r["cancelled"] == true {
            eprintln!("Navigation cancelled");
            return Ok(ExitCode::from(3));
        }
        eprintln!(
            "Navigated to selected point (leaf {})",
            r["newLeafId"].as_str().unwrap_or("(before the first entry)")
        );
        if let Some(text) = r["editorText"].as_str() {
            writeln!(out, "{text}")?;
        }
        return Ok(ExitCode::SUCCESS);
    }
}

/// Runs the /branch message selector until the user cancels or picks a message.
pub(crate) fn select_message(term: &mut Term, next: NextEvent<'_>, mut sel: ForkSelector) -> Result<Option<String>> {
    sel.set_terminal_height(term.size().map(|s| s.height).unwrap_or(24));
    loop {
        term.draw(|f| {
            let area = f.area();
            view::draw_fork_selector(&sel, area, f.buffer_mut());
        })?;
        let Some(key) = read_key(next, |rows| sel.set_terminal_height(rows))? else { continue };
        let Some(input) = fork_selector::decode(&key) else { continue };
        match sel.handle(input) {
            ForkOutcome::None => {}
            ForkOutcome::Cancel => return Ok(None),
            ForkOutcome::Select(id) => return Ok(Some(id)),
        }
    }
}

/// `arbor tui --fork [FILE]`: pick a user message and branch from it (pi's /branch, spec 5.7).
/// The new session is written like `arbor fork --before`, whose output this prints.
pub fn run_fork(
    out: &mut dyn Write,
    file: Option<PathBuf>,
    model: &ModelArgs,
    options: &dyn Fn() -> SessionOptions,
) -> Result<ExitCode> {
    let Some((file, _)) = resolve_file(file, None)? else { return Ok(ExitCode::SUCCESS) };
    let sel = {
        let s = Session::open(&file, OpenMode::ReadOnly, options())?;
        crate::cli::print_diagnostics(&file, s.diagnostics());
        ForkSelector::from_session(&s)
    };
    let Some(sel) = sel else {
        eprintln!("No messages to fork from");
        return Ok(ExitCode::from(1));
    };
    let picked = {
        let _guard = TerminalGuard::enter()?;
        let mut term = Terminal::new(CrosstermBackend::new(io::stderr()))?;
        term.clear()?;
        select_message(&mut term, &mut || Ok(event::read()?), sel)?
    };
    let Some(id) = picked else {
        return Ok(ExitCode::SUCCESS);
    };
    let model = crate::agent_cmds::ModelArgs { diagnostics_shown: true, ..model.clone() };
    crate::agent_cmds::fork_before(out, &file, &id, None, &model, options(), false)
}

/// While a summary runs: the terminal in raw mode and a thread that raises
/// `pressed` when Escape (or Ctrl+C, which raw mode delivers as a key) comes in.
struct EscapeWatch {
    pressed: std::sync::Arc<std::sync::atomic::AtomicBool>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    raw: bool,
}

impl EscapeWatch {
    fn start() -> EscapeWatch {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let pressed = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        // Without a terminal (raw mode fails) Ctrl+C still arrives as SIGINT.
        let raw = terminal::enable_raw_mode().is_ok();
        let thread = raw.then(|| {
            let (pressed, stop) = (pressed.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    if !event::poll(std::time::Duration::from_millis(25)).unwrap_or(false) {
                        continue;
                    }
                    if let Ok(Event::Key(k)) = event::read() {
                        let ctrl_c = k.code == crossterm::event::KeyCode::Char('c')
                            && k.modifiers.contains(crossterm::event::KeyModifiers::CONTROL);
                        if k.code == crossterm::event::KeyCode::Esc || ctrl_c {
                            pressed.store(true, Ordering::SeqCst);
                        }
                    }
                }
            })
        });
        EscapeWatch { pressed, stop, thread, raw }
    }
}

impl Drop for EscapeWatch {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if self.raw {
            let _ = terminal::disable_raw_mode();
        }
    }
}
