//! `arbor tui`: pi's interactive `/tree` flow (docs/cli.md, "arbor tui") over a session file.
//!
//! The selector itself is a pure state machine ([`selector`]) drawn by [`view`];
//! this module runs it on the terminal ([`crate::ui::terminal`]), writes labels
//! through `arbor-tree`, and navigates through the same code as
//! `arbor navigate` (`crate::shared::agent`), so summaries, hooks and
//! Ctrl-C behave the same. The screen is drawn on stderr, so stdout carries
//! only the editor text left by a navigation (`arbor tui > prompt.txt` works).
//!
//! `arbor tui --fork` opens the /branch message selector ([`fork_selector`]) instead and
//! forks like `arbor fork --before`, whose output (the new session's path and
//! the editor text) goes to stdout.

mod escape;
mod fork_selector;
mod keys;
mod selector;
mod view;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use arbor_agent::NavigateOptions;
use arbor_tree::{paths, OpenMode, Session};

use crate::shared::agent::{self, AgentSetup, ModelArgs};
use crate::shared::follow::{Followed, Watch};
use crate::shared::output::home;
use crate::shared::session::{print_diagnostics, Globals};
use crate::ui::picker::{self, Picked};
use crate::ui::terminal::{read_key, NextEvent, Term, TerminalGuard};
use escape::EscapeWatch;
pub use fork_selector::one_line;
use fork_selector::ForkOutcome;
pub use fork_selector::ForkSelector;
pub use selector::FilterMode;
use selector::Outcome;
pub use selector::TreeSelector;

/// How often a followed session is looked at while no key is pressed.
const FOLLOW_TICK: Duration = Duration::from_millis(200);

/// The choices offered after Enter (docs/cli.md, "arbor tui").
const CHOICES: [&str; 3] = ["No summary", "Summarize", "Summarize with custom prompt"];

/// What the user decided in one run of the selector.
#[derive(Debug)]
pub enum Decision {
    /// Left without choosing.
    Quit,
    /// Go to `id`, with a summary of the branch left behind when asked.
    Navigate { id: String, summarize: bool, instructions: Option<String> },
}

/// Screens after the tree itself.
enum Screen {
    Tree,
    Choice { id: String, index: usize },
    Prompt { id: String, value: String },
}

/// What a key press on a screen leads to.
enum Step {
    /// Show this screen next.
    Show(Screen),
    /// Reopen the tree with this entry selected.
    Reopen(String),
    /// The user decided.
    Done(Decision),
}

/// A selector over `session` (paths shortened with the home directory) and the session's real leaf.
pub fn selector_over(
    session: &Session,
    height: u16,
    initial: Option<&str>,
    filter: FilterMode,
) -> (TreeSelector, Option<String>) {
    let home = home();
    (TreeSelector::new(session, height, initial, filter, home.as_deref()), session.leaf_id().map(str::to_owned))
}

/// The session to open and the entry to select: `file` and `at` as given;
/// without a file, what the session picker picks (`None`: the user left it),
/// or, without a terminal for it (or on a server), the most recent session
/// of the cwd.
fn resolve_file(
    file: Option<PathBuf>,
    at: Option<String>,
    globals: &Globals,
) -> Result<Option<(PathBuf, Option<String>)>> {
    if let Some(f) = file {
        return Ok(Some((globals.session(&f)?, at)));
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let cwd = cwd.to_string_lossy().into_owned();
    let opts = globals.options()?;
    let root = opts.sessions_root.clone().unwrap_or_else(paths::sessions_root);
    let dir = paths::session_dir_for(&root, &cwd);
    if picker::available() && globals.store.is_none() {
        return match picker::pick(&root, &cwd)? {
            Picked::Session { path, at: hit } => Ok(Some((path, at.or(hit)))),
            Picked::Left => Ok(None),
            Picked::NoSessions => bail!("no session for {cwd} in {}", dir.display()),
        };
    }
    match arbor_tree::find_most_recent_session(opts.store.as_ref(), &dir)? {
        Some(p) => Ok(Some((p, at))),
        None => bail!("no session for {cwd} in {}", dir.display()),
    }
}

/// Where the tree selector gets its session and writes labels: a file
/// (`arbor tui`) or the chat's open session (`arbor chat`).
pub trait TreeHost {
    /// A selector over the session as it is now, and the session's real leaf.
    fn selector(
        &mut self,
        height: u16,
        initial: Option<&str>,
        filter: FilterMode,
    ) -> Result<(TreeSelector, Option<String>)>;
    /// Writes a label change; the answer is the status line.
    fn save_label(&mut self, id: &str, label: Option<&str>) -> Result<String>;
    /// True when the session changed since the last look (`--follow`): the tree is drawn again.
    fn changed(&mut self) -> Result<bool> {
        Ok(false)
    }
}

/// `arbor tui`'s host: the file, reopened read-only for each look, and
/// watched for new entries with `--follow`.
struct FileHost<'a> {
    file: &'a Path,
    globals: &'a Globals,
    watch: Option<&'a mut Watch>,
}

impl TreeHost for FileHost<'_> {
    fn selector(
        &mut self,
        height: u16,
        initial: Option<&str>,
        filter: FilterMode,
    ) -> Result<(TreeSelector, Option<String>)> {
        let session = Session::open(self.file, OpenMode::ReadOnly, self.globals.options()?)?;
        Ok(selector_over(&session, height, initial, filter))
    }

    fn changed(&mut self) -> Result<bool> {
        let Some(w) = self.watch.as_deref_mut() else { return Ok(false) };
        Ok(w.wait(Duration::ZERO)? != Followed::Idle)
    }

    fn save_label(&mut self, id: &str, label: Option<&str>) -> Result<String> {
        let mut s = Session::open(self.file, OpenMode::Write, self.globals.options()?)?;
        s.append_label_change(id, label).with_context(|| self.file.display().to_string())?;
        Ok(match label {
            Some(l) => format!("Label set: {l}"),
            None => "Label cleared".to_owned(),
        })
    }
}

/// Runs the selector until the user quits or picks a point to navigate to.
/// With `skip_prompt` (pi's `branchSummary.skipPrompt`) Enter moves without a summary.
pub fn select(
    term: &mut Term,
    host: &mut dyn TreeHost,
    next: NextEvent<'_>,
    initial: Option<&str>,
    filter: FilterMode,
    mut status: Option<String>,
    skip_prompt: bool,
) -> Result<Decision> {
    let height = term.size().map(|s| s.height).unwrap_or(24);
    let (mut sel, mut real_leaf) = host.selector(height, initial, filter)?;
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
        let Some(key) = read_key(next, |rows| sel.set_terminal_height(rows))? else {
            // Followed: new entries arrived; the tree is read again, the selection and filter kept
            // (not while a search or a label is being typed).
            if matches!(screen, Screen::Tree)
                && sel.query().is_empty()
                && sel.label_edit().is_none()
                && host.changed()?
            {
                let at = sel.selected_id().map(str::to_owned);
                let (fresh, leaf) = host.selector(height, at.as_deref(), sel.mode())?;
                (sel, real_leaf) = (fresh, leaf);
            }
            continue;
        };
        let step = match screen {
            Screen::Tree => {
                let Some(input) = keys::decode(&key) else { continue };
                status = None;
                on_tree_input(&mut sel, host, input, &mut status, real_leaf.as_deref(), skip_prompt)
            }
            Screen::Choice { id, index } => on_choice_key(&key, id, index),
            Screen::Prompt { id, value } => on_prompt_key(&key, id, value),
        };
        screen = match step {
            Step::Show(s) => s,
            Step::Reopen(id) => {
                // pi re-opens the tree at this entry with the filter from the settings.
                sel = host.selector(height, Some(&id), filter)?.0;
                Screen::Tree
            }
            Step::Done(d) => return Ok(d),
        };
    }
}

/// The tree screen's answer to a selector input.
fn on_tree_input(
    sel: &mut TreeSelector,
    host: &mut dyn TreeHost,
    input: selector::Input,
    status: &mut Option<String>,
    real_leaf: Option<&str>,
    skip_prompt: bool,
) -> Step {
    match sel.handle(input) {
        Outcome::None => Step::Show(Screen::Tree),
        Outcome::Cancel => Step::Done(Decision::Quit),
        Outcome::LabelChanged(id, label) => {
            *status = Some(match host.save_label(&id, label.as_deref()) {
                Ok(s) => s,
                Err(e) => format!("Error: {e:#}"),
            });
            Step::Show(Screen::Tree)
        }
        Outcome::Select(id) => {
            if sel.is_leaf(&id) || real_leaf == Some(id.as_str()) {
                *status = Some("Already at this point".to_owned());
                Step::Show(Screen::Tree)
            } else if skip_prompt {
                Step::Done(Decision::Navigate { id, summarize: false, instructions: None })
            } else {
                Step::Show(Screen::Choice { id, index: 0 })
            }
        }
    }
}

/// The summary choice's answer to a key.
fn on_choice_key(key: &KeyEvent, id: String, index: usize) -> Step {
    let n = CHOICES.len();
    let ctrl_c = key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Up => Step::Show(Screen::Choice { id, index: (index + n - 1) % n }),
        KeyCode::Down => Step::Show(Screen::Choice { id, index: (index + 1) % n }),
        KeyCode::Enter => match index {
            0 => Step::Done(Decision::Navigate { id, summarize: false, instructions: None }),
            1 => Step::Done(Decision::Navigate { id, summarize: true, instructions: None }),
            _ => Step::Show(Screen::Prompt { id, value: String::new() }),
        },
        KeyCode::Esc => Step::Reopen(id),
        _ if ctrl_c => Step::Reopen(id),
        _ => Step::Show(Screen::Choice { id, index }),
    }
}

/// The custom-instructions prompt's answer to a key.
fn on_prompt_key(key: &KeyEvent, id: String, mut value: String) -> Step {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Esc => Step::Show(Screen::Choice { id, index: 2 }),
        KeyCode::Char('c') if ctrl => Step::Show(Screen::Choice { id, index: 2 }),
        KeyCode::Enter => {
            let text = value.trim().to_owned();
            Step::Done(Decision::Navigate { id, summarize: true, instructions: (!text.is_empty()).then_some(text) })
        }
        KeyCode::Backspace => {
            value.pop();
            Step::Show(Screen::Prompt { id, value })
        }
        KeyCode::Char(c) if !ctrl => {
            value.push(c);
            Step::Show(Screen::Prompt { id, value })
        }
        _ => Step::Show(Screen::Prompt { id, value }),
    }
}

/// `arbor tui [FILE] [--at ID] [--follow]`: browse the tree (from entry `at`), label entries, and
/// navigate; with `follow`, the tree is drawn again as entries arrive.
pub fn run(
    out: &mut dyn Write,
    file: Option<PathBuf>,
    at: Option<String>,
    filter: FilterMode,
    follow: bool,
    model: &ModelArgs,
    globals: &Globals,
) -> Result<ExitCode> {
    let Some((file, at)) = resolve_file(file, at, globals)? else { return Ok(ExitCode::SUCCESS) };
    if !first_look(out, &file, at.as_deref(), globals)? {
        return Ok(ExitCode::SUCCESS);
    }
    // Shown above: navigations below must not print them again.
    let model = &ModelArgs { diagnostics_shown: true, ..model.clone() };
    let mut initial: Option<String> = at;
    let mut status: Option<String> = None;
    // Followed from now on: what is there was just read.
    let mut watch = if follow { Some(Watch::open(globals, &file)?.0) } else { None };
    loop {
        let decision = {
            let _guard = TerminalGuard::enter()?;
            let mut term = Terminal::new(CrosstermBackend::new(io::stderr()))?;
            term.clear()?;
            let mut host = FileHost { file: &file, globals, watch: watch.as_mut() };
            let mut next = || -> Result<Event> {
                // Following, a quiet terminal still gets a look at the session now and then.
                if follow && !event::poll(FOLLOW_TICK)? {
                    return Ok(Event::FocusGained);
                }
                Ok(event::read()?)
            };
            select(&mut term, &mut host, &mut next, initial.as_deref(), filter, status.take(), false)?
        };
        let Decision::Navigate { id, summarize, instructions } = decision else {
            return Ok(ExitCode::SUCCESS);
        };
        let opts = NavigateOptions { summarize, custom_instructions: instructions, ..Default::default() };
        let r = match navigate(
            AgentSetup { file: &file, model, mode: OpenMode::Write, session: globals.options()? },
            &id,
            opts,
        ) {
            Ok(r) => r,
            Err(e) => {
                status = Some(format!("Error: {e:#}"));
                initial = Some(id);
                continue;
            }
        };
        if r.aborted {
            status = Some("Branch summarization cancelled".to_owned());
            initial = Some(id);
            continue;
        }
        if r.cancelled {
            eprintln!("Navigation cancelled");
            return Ok(ExitCode::from(3));
        }
        eprintln!(
            "Navigated to selected point (leaf {})",
            r.new_leaf_id.as_deref().unwrap_or("(before the first entry)")
        );
        if let Some(text) = &r.editor_text {
            writeln!(out, "{text}")?;
        }
        return Ok(ExitCode::SUCCESS);
    }
}

/// Opens `file` once to show its diagnostics and check `at`; false (after
/// saying so) when the session has no entries.
fn first_look(out: &mut dyn Write, file: &Path, at: Option<&str>, globals: &Globals) -> Result<bool> {
    let s = Session::open(file, OpenMode::ReadOnly, globals.options()?)?;
    print_diagnostics(file, s.diagnostics());
    if s.get_tree().is_empty() {
        writeln!(out, "No entries in session")?;
        return Ok(false);
    }
    if let Some(id) = at {
        if s.get_entry(id).is_none() {
            bail!("{}: Entry {id} not found", file.display());
        }
    }
    Ok(true)
}

/// Navigates as `arbor navigate` does; Escape (or Ctrl+C) aborts a summary.
fn navigate(setup: AgentSetup<'_>, id: &str, opts: NavigateOptions) -> Result<arbor_agent::NavigateResult> {
    let escape = opts.summarize.then(|| {
        eprintln!("Summarizing branch... (Esc or Ctrl+C to cancel)");
        EscapeWatch::start()
    });
    agent::navigate(setup, id, opts, escape.as_ref().map(EscapeWatch::flag))
}

/// Runs the /branch message selector until the user cancels or picks a message.
pub fn select_message(term: &mut Term, next: NextEvent<'_>, mut sel: ForkSelector) -> Result<Option<String>> {
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

/// `arbor tui --fork [FILE]`: pick a user message and branch from it (pi's /branch, docs/architecture.md, "Forking before a user message").
/// The new session is written like `arbor fork --before`, whose output this prints.
pub fn run_fork(out: &mut dyn Write, file: Option<PathBuf>, model: &ModelArgs, globals: &Globals) -> Result<ExitCode> {
    let Some((file, _)) = resolve_file(file, None, globals)? else { return Ok(ExitCode::SUCCESS) };
    let sel = {
        let s = Session::open(&file, OpenMode::ReadOnly, globals.options()?)?;
        print_diagnostics(&file, s.diagnostics());
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
    let model = ModelArgs { diagnostics_shown: true, ..model.clone() };
    let setup = AgentSetup { file: &file, model: &model, mode: OpenMode::ReadOnly, session: globals.options()? };
    let r = agent::fork_before(setup, &id)?;
    agent::write_fork(out, &r, false)
}
