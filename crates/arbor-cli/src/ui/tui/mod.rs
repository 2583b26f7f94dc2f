//! `arbor tui`: pi's interactive `/tree` flow (docs/cli.md, "arbor tui") over a session file.
//!
//! The selector itself is a pure state machine ([`selector`]) drawn by
//! [`view`] and fed from the session by a [`loader::Loader`]; this module
//! runs it on the terminal ([`crate::ui::terminal`]), writes labels through
//! `arbor-tree`, and navigates through the same code as `arbor navigate`
//! (`crate::shared::agent`), so summaries, hooks and Ctrl-C behave the same.
//! The screen is drawn on stderr, so stdout carries only the editor text
//! left by the last navigation (`arbor tui > prompt.txt` works).
//!
//! Unlike pi's `/tree`, `arbor tui` stays open after a navigation, on the
//! session as the navigation left it (no second read of the file); Escape on
//! an empty search quits (`q` is typed into the search, as in pi).
//!
//! `arbor tui --fork` opens the /branch message selector ([`fork_selector`]) instead and
//! forks like `arbor fork --before`, whose output (the new session's path and
//! the editor text) goes to stdout.

pub mod bench;
mod escape;
mod fork_selector;
mod keys;
pub mod loader;
pub mod selector;
mod view;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use arbor_agent::NavigateOptions;
use arbor_tree::sessions::{Follow, FollowFrom, Followed};
use arbor_tree::{OpenMode, Session};

use crate::shared::agent::{self, AgentSetup, ModelArgs};
use crate::shared::output::{error_line, home};
use crate::shared::session::{print_diagnostics, Globals};
use crate::shared::visible::{say, Visible};
use crate::ui::picker::{self, Picked};
use crate::ui::terminal::{read_key, NextEvent, Term, TerminalGuard};
use escape::EscapeWatch;
pub use fork_selector::one_line;
use fork_selector::ForkOutcome;
pub use fork_selector::ForkSelector;
use loader::Loader;
pub use selector::FilterMode;
pub use selector::TreeSelector;
use selector::{Input, Outcome};

/// How often a followed session is looked at while no key is pressed.
const FOLLOW_TICK: Duration = Duration::from_millis(200);

/// How often the screen is drawn again while entries are still being read.
const PROGRESS_TICK: Duration = Duration::from_millis(150);

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
    /// Back to the tree with this entry selected and the filter from the settings.
    Reopen(String),
    /// The user decided.
    Done(Decision),
}

/// The session to open and the entry to select: `file` and `at` as given;
/// without a file, what the session picker picks (`None`: the user left it),
/// or, without a terminal for it, the most recent session of the cwd.
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
    let dir = opts.dir_for(&cwd)?;
    if picker::available() {
        return match picker::pick(globals.sessions()?, &cwd)? {
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

/// What the header calls a session: its name, else its file's name.
pub fn session_title(session: &Session) -> String {
    // A file changed on disk is called by its file's name.
    match session.session_name().ok().flatten() {
        Some(name) => name.to_owned(),
        None => session
            .session_file()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| session.session_id().to_owned()),
    }
}

/// Where the tree selector gets its session and writes labels: a file
/// (`arbor tui`) or the chat's open session (`arbor chat`).
pub trait TreeHost {
    /// The session the tree shows.
    fn session(&self) -> &Session;
    /// Writes a label change; the answer is the status line.
    fn save_label(&mut self, id: &str, label: Option<&str>) -> Result<String>;
    /// True when the session changed since the last look and was read again (`--follow`).
    fn changed(&mut self) -> Result<bool> {
        Ok(false)
    }
    /// The status line while following cannot reach the session's backend
    /// (`--follow` on a server that is restarting); `None` otherwise.
    fn follow_status(&self) -> Option<String> {
        None
    }
    /// What Escape on an empty search does, for the help line.
    fn exit_hint(&self) -> &'static str {
        "quit"
    }
}

/// `arbor tui`'s host: the file, read once (and again when `--follow`
/// sees it grow), labels written through a writer of their own.
struct FileHost<'a> {
    file: &'a Path,
    globals: &'a Globals,
    session: Session,
    watch: Option<Box<dyn Follow>>,
    /// Why the backend cannot be reached, while it cannot.
    away: Option<String>,
}

/// How the status line starts while following reconnects.
const RECONNECTING: &str = "Reconnecting…";

impl TreeHost for FileHost<'_> {
    fn session(&self) -> &Session {
        &self.session
    }

    fn changed(&mut self) -> Result<bool> {
        let Some(w) = self.watch.as_mut() else { return Ok(false) };
        // A session that went away keeps its tree on screen until it comes back.
        let got = w.wait(Duration::ZERO)?;
        self.away = match &got {
            Followed::Reconnecting(why) => Some(why.chars().filter(|c| !c.is_control()).collect()),
            _ => None,
        };
        if matches!(got, Followed::Idle | Followed::Gone | Followed::Reconnecting(_)) {
            return Ok(false);
        }
        self.session = Session::open(self.file, OpenMode::ReadOnly, self.globals.options()?)?;
        Ok(true)
    }

    fn follow_status(&self) -> Option<String> {
        self.away.as_ref().map(|why| format!("{RECONNECTING} ({why})"))
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

/// The tree screen and what feeds it.
struct Tree {
    loader: Loader,
    sel: TreeSelector,
    title: String,
    /// What Escape does ([`TreeHost::exit_hint`]).
    exit: &'static str,
}

impl Tree {
    fn open(host: &dyn TreeHost, term: &Term, initial: &[&str], filter: FilterMode) -> Result<Tree> {
        let area = term.size()?;
        let session = host.session();
        let exit = host.exit_hint();
        let size = view::list_size(area.width, area.height, None, exit);
        let (loader, sel) = Loader::open(session, home(), size, initial, filter);
        Ok(Tree { loader, sel, title: session_title(session), exit })
    }
}

/// Runs the selector until the user quits or picks a point to navigate to.
/// With `skip_prompt` (pi's `branchSummary.skipPrompt`) Enter moves without a summary.
pub fn select(
    term: &mut Term,
    host: &mut dyn TreeHost,
    next: NextEvent<'_>,
    initial: &[&str],
    filter: FilterMode,
    mut status: Option<String>,
    skip_prompt: bool,
) -> Result<Decision> {
    let mut tree = Tree::open(host, term, initial, filter)?;
    let mut screen = Screen::Tree;
    let mut pending: Option<Event> = None;
    let mut drawn: Option<Instant> = None;
    loop {
        let area = term.size()?;
        if matches!(screen, Screen::Tree) {
            let (page, width) = view::list_size(area.width, area.height, status.as_deref(), tree.exit);
            tree.sel.set_size(page, width);
            tree.loader.prepare(host.session(), &mut tree.sel);
        }
        if drawn.is_none_or(|t| t.elapsed() >= PROGRESS_TICK) || pending.is_some() {
            draw(term, &screen, &tree, status.as_deref())?;
            drawn = Some(Instant::now());
        }
        let event = match pending.take() {
            Some(e) => e,
            None if !tree.loader.is_done(&tree.sel) => match next(Some(Duration::ZERO))? {
                Some(e) => e,
                None => {
                    let reading = tree.sel.reading().is_some();
                    // Drawn again once the reading is done (the count is final) and once all is done.
                    if !tree.loader.step(host.session(), &mut tree.sel) || (reading && tree.sel.reading().is_none()) {
                        drawn = None;
                    }
                    continue;
                }
            },
            None => match next(None)? {
                Some(e) => e,
                None => continue,
            },
        };
        drawn = None;
        let Some(key) = read_key(event) else {
            on_follow_tick(term, host, &screen, &mut tree, &mut status)?;
            continue;
        };
        let step = match screen {
            Screen::Tree => {
                let Some(input) = keys::decode(&key) else { continue };
                let input = type_ahead(input, next, &mut pending)?;
                status = None;
                on_tree_input(&mut tree.sel, host, input, &mut status, skip_prompt)
            }
            Screen::Choice { id, index } => on_choice_key(&key, id, index),
            Screen::Prompt { id, value } => on_prompt_key(&key, id, value),
        };
        screen = match step {
            Step::Show(s) => s,
            Step::Reopen(id) => {
                // pi re-opens the tree at this entry with the filter from the settings.
                tree = Tree::open(host, term, &[&id], filter)?;
                Screen::Tree
            }
            Step::Done(d) => return Ok(d),
        };
    }
}

/// A typed character and those typed right after it, while the list was
/// busy, as one input: the search answers once for all of them.
fn type_ahead(input: Input, next: NextEvent<'_>, pending: &mut Option<Event>) -> Result<Input> {
    let Input::Char(first) = input else { return Ok(input) };
    let mut typed = first.to_string();
    while let Some(e) = next(Some(Duration::ZERO))? {
        let released = matches!(&e, Event::Key(k) if k.kind == KeyEventKind::Release);
        match read_key(e.clone()).as_ref().and_then(keys::decode) {
            Some(Input::Char(c)) => typed.push(c),
            _ if released => {}
            _ => {
                *pending = Some(e);
                break;
            }
        }
    }
    Ok(if typed.chars().count() == 1 { Input::Char(first) } else { Input::Chars(typed) })
}

/// A tick of `--follow`: when new entries arrived, the tree is read again,
/// the selection and filter kept (not while a search or a label is being
/// typed); the status line says when the backend is being reconnected to.
fn on_follow_tick(
    term: &mut Term,
    host: &mut dyn TreeHost,
    screen: &Screen,
    tree: &mut Tree,
    status: &mut Option<String>,
) -> Result<()> {
    if matches!(screen, Screen::Tree)
        && tree.sel.query().is_empty()
        && tree.sel.label_edit().is_none()
        && host.changed()?
    {
        let at: Vec<&str> = tree.sel.selected_id().into_iter().collect::<Vec<_>>();
        let mode = tree.sel.mode();
        *tree = Tree::open(host, term, at.as_slice(), mode)?;
    }
    match host.follow_status() {
        Some(s) => *status = Some(s),
        None if status.as_deref().is_some_and(|s| s.starts_with(RECONNECTING)) => *status = None,
        None => {}
    }
    Ok(())
}

fn draw(term: &mut Term, screen: &Screen, tree: &Tree, status: Option<&str>) -> Result<()> {
    term.draw(|f| {
        let area = f.area();
        let buf = f.buffer_mut();
        match screen {
            Screen::Tree => view::draw_selector(&tree.sel, &tree.title, tree.exit, status, area, buf),
            Screen::Choice { index, .. } => view::draw_choice("Summarize branch?", &CHOICES, *index, area, buf),
            Screen::Prompt { value, .. } => view::draw_prompt("Custom summarization instructions", value, area, buf),
        }
    })?;
    Ok(())
}

/// The tree screen's answer to a selector input.
fn on_tree_input(
    sel: &mut TreeSelector,
    host: &mut dyn TreeHost,
    input: Input,
    status: &mut Option<String>,
    skip_prompt: bool,
) -> Step {
    match sel.handle(input) {
        Outcome::None => Step::Show(Screen::Tree),
        Outcome::Cancel => Step::Done(Decision::Quit),
        Outcome::LabelChanged(id, label) => {
            *status = Some(match host.save_label(&id, label.as_deref()) {
                Ok(s) => s,
                Err(e) => format!("Error: {}", error_line(&e)),
            });
            Step::Show(Screen::Tree)
        }
        Outcome::Select(id) => {
            if sel.is_leaf(&id) || host.session().leaf_id() == Some(id.as_str()) {
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

/// The terminal's next event: a key, or (with `--follow`) a tick now and then.
fn terminal_events(follow: bool) -> impl FnMut(Option<Duration>) -> Result<Option<Event>> {
    move |wait| {
        let wait = match (wait, follow) {
            (Some(w), _) => w,
            (None, true) => FOLLOW_TICK,
            (None, false) => return Ok(Some(event::read()?)),
        };
        if event::poll(wait)? {
            return Ok(Some(event::read()?));
        }
        // Following, a quiet terminal still gets a look at the session now and then.
        Ok(follow.then_some(Event::FocusGained))
    }
}

/// What one navigation from `arbor tui` left: the status line, where to
/// reopen the tree, the editor text, and whether a hook cancelled it.
struct Navigated {
    status: String,
    /// Where the cursor goes: the first of these the list shows.
    at: Vec<String>,
    editor_text: Option<String>,
}

/// Navigates to `id` on `file` while the selector's screen shows what is going on.
fn navigate_on_screen(
    term: &mut Term,
    host: &mut FileHost<'_>,
    model: &ModelArgs,
    decision: (String, bool, Option<String>),
) -> Result<Navigated> {
    let (id, summarize, instructions) = decision;
    let what = if summarize { "Summarizing branch... (Esc or Ctrl+C to cancel)" } else { "Navigating..." };
    term.draw(|f| {
        let area = f.area();
        view::draw_prompt_line(what, area, f.buffer_mut());
    })?;
    let escape = summarize.then(EscapeWatch::start);
    let setup = AgentSetup { file: host.file, model, mode: OpenMode::Write, session: host.globals.options()? };
    let opts = NavigateOptions { summarize, custom_instructions: instructions, ..Default::default() };
    let result = agent::navigate_and_keep(setup, &id, opts, escape.as_ref().map(EscapeWatch::flag));
    drop(escape);
    // Anything printed meanwhile (a failed hook) went over the screen: draw it whole again.
    term.clear()?;
    let (r, session) = match result {
        Ok(r) => r,
        Err(e) => {
            return Ok(Navigated { status: format!("Error: {}", error_line(&e)), at: vec![id], editor_text: None })
        }
    };
    if r.aborted {
        return Ok(Navigated { status: "Branch summarization cancelled".to_owned(), at: vec![id], editor_text: None });
    }
    if r.cancelled {
        return Ok(Navigated { status: "Navigation cancelled".to_owned(), at: vec![id], editor_text: None });
    }
    // The cursor goes where the leaf went: the entry itself, or for a user message (whose
    // text goes to the editor) its parent, when the list shows it (or an ancestor).
    let parent = session.get_entry(&id)?.and_then(|e| e.parent_id.clone());
    let at = match (&r.editor_text, parent) {
        (Some(_), Some(p)) => vec![p, id],
        _ => vec![id],
    };
    host.session = session;
    Ok(Navigated {
        status: format!(
            "Navigated to selected point (leaf {}). Esc quits.",
            r.new_leaf_id.as_deref().unwrap_or("(before the first entry)")
        ),
        at,
        editor_text: r.editor_text,
    })
}

/// `arbor tui [FILE] [--at ID] [--follow]`: browse the tree (from entry `at`), label entries, and
/// navigate, as often as wanted; with `follow`, the tree is drawn again as entries arrive.
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
    let session = Session::open(&file, OpenMode::ReadOnly, globals.options()?)?;
    print_diagnostics(&file, session.diagnostics());
    if session.get_tree().is_empty() {
        writeln!(out, "No entries in session")?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(id) = &at {
        if session.position_of(id).is_none() {
            bail!("{}: Entry {id} not found", file.display());
        }
    }
    // Shown above: navigations below must not print them again.
    let model = &ModelArgs { diagnostics_shown: true, ..model.clone() };
    // Followed from now on: what is there was just read.
    let watch = if follow { Some(globals.sessions()?.follow(&file, FollowFrom::End)?.0) } else { None };
    let mut host = FileHost { file: &file, globals, session, watch, away: None };
    let mut initial: Vec<String> = at.into_iter().collect();
    let mut status: Option<String> = None;
    let mut editor_text: Option<String> = None;
    {
        let _guard = TerminalGuard::enter()?;
        let mut term = Terminal::new(CrosstermBackend::new(io::stderr()))?;
        term.clear()?;
        let mut next = terminal_events(follow);
        loop {
            let at: Vec<&str> = initial.iter().map(String::as_str).collect();
            let decision = select(&mut term, &mut host, &mut next, &at, filter, status.take(), false)?;
            let Decision::Navigate { id, summarize, instructions } = decision else { break };
            let done = navigate_on_screen(&mut term, &mut host, model, (id, summarize, instructions))?;
            status = Some(done.status);
            initial = done.at;
            if done.editor_text.is_some() {
                editor_text = done.editor_text;
            }
        }
    }
    if let Some(text) = &editor_text {
        // A session's text, on its way to a terminal (or a file): its control characters are shown.
        let mut out = Visible::new(out);
        writeln!(out, "{text}")?;
        out.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs the /branch message selector until the user cancels or picks a message.
pub fn select_message(term: &mut Term, next: NextEvent<'_>, mut sel: ForkSelector) -> Result<Option<String>> {
    sel.set_terminal_height(term.size().map(|s| s.height).unwrap_or(24));
    loop {
        term.draw(|f| {
            let area = f.area();
            view::draw_fork_selector(&sel, area, f.buffer_mut());
        })?;
        let Some(event) = next(None)? else { continue };
        if let Event::Resize(_, rows) = event {
            sel.set_terminal_height(rows);
        }
        let Some(key) = read_key(event) else { continue };
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
        say!("No messages to fork from");
        return Ok(ExitCode::from(1));
    };
    let picked = {
        let _guard = TerminalGuard::enter()?;
        let mut term = Terminal::new(CrosstermBackend::new(io::stderr()))?;
        term.clear()?;
        select_message(&mut term, &mut terminal_events(false), sel)?
    };
    let Some(id) = picked else {
        return Ok(ExitCode::SUCCESS);
    };
    let model = ModelArgs { diagnostics_shown: true, ..model.clone() };
    let setup = AgentSetup { file: &file, model: &model, mode: OpenMode::ReadOnly, session: globals.options()? };
    let r = agent::fork_before(setup, &id)?;
    agent::write_fork(out, &r, false)
}
