//! The session picker: `arbor tui` and `arbor chat` without a file (pi's
//! `/resume`). The sessions of the current directory (Tab: of every
//! directory) from the backend the sessions live in (the catalog of the
//! sessions root, or the server), newest first, with their name or first
//! message, age and message count; typing searches them (pi's picker syntax
//! on the id, name, first message and cwd) and, below them, the text of every
//! entry (the backend's search). Enter picks a session, or an entry of one.
//!
//! The listing is refreshed before the picker shows; the search index is
//! brought up to date on a thread of its own meanwhile (the footer shows how
//! far), so the picker never waits for it. The state machine is [`state`],
//! the drawing [`view`]; this module owns the terminal and the sessions.

mod state;
mod view;

use std::io;
use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::Result;
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use arbor_tree::sessions::{ListRequest, NoProgress, Pass, Progress, Scope, SearchRequest, Sessions};

use crate::shared::backend;
use crate::shared::output::home;
use crate::shared::progress::Bar;
use crate::ui::terminal::TerminalGuard;
use state::{Input, Outcome, Picker};

/// How the picker ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Picked {
    /// A session, at an entry when a search hit was picked.
    Session { path: PathBuf, at: Option<String> },
    /// The user left the picker.
    Left,
    /// There is no session under the root: nothing to pick from.
    NoSessions,
}

/// Entry hits the picker shows for a query.
const HITS: usize = 50;
/// How long typing must pause before the entries are searched.
const SETTLE: Duration = Duration::from_millis(120);

/// True when the picker can run: standard input and the screen (stderr) are terminals.
pub(crate) fn available() -> bool {
    use std::io::IsTerminal;
    io::stdin().is_terminal() && io::stderr().is_terminal()
}

/// Runs the picker over `sessions`, starting with those of `cwd`.
pub(crate) fn pick(sessions: &Arc<dyn Sessions>, cwd: &str) -> Result<Picked> {
    let here = Scope::cwd(cwd);
    let backend = sessions.clone();
    let sessions = backend.listing(&ListRequest::new(here.clone()), &Bar::new())?;
    let (sessions, scope_all) = if sessions.is_empty() {
        (backend.listing(&ListRequest::new(Scope::All), &Bar::new())?, true)
    } else {
        (sessions, false)
    };
    backend::warn(backend.as_ref());
    if sessions.is_empty() {
        return Ok(Picked::NoSessions);
    }
    let indexing = start_indexing(backend.clone());
    let _guard = TerminalGuard::enter()?;
    let mut term = Terminal::new(CrosstermBackend::new(io::stderr()))?;
    term.clear()?;
    let height = term.size().map_or(24, |s| s.height);
    let picker = Picker::new(sessions, scope_all, usize::from(height.saturating_sub(view::CHROME)));
    let progress = Some("indexing entries…".to_owned());
    let mut run = Run { backend, picker, here, indexing, dirty: None, progress };
    let home = home();
    loop {
        run.news();
        run.search_when_settled();
        term.draw(|f| {
            let area = f.area();
            view::draw(&run.picker, home.as_deref(), area, f.buffer_mut());
        })?;
        if !event::poll(Duration::from_millis(50))? {
            continue;
        }
        let key = match event::read()? {
            Event::Key(k) if k.kind != KeyEventKind::Release => k,
            Event::Resize(_, rows) => {
                run.picker.set_height(usize::from(rows.saturating_sub(view::CHROME)));
                continue;
            }
            _ => continue,
        };
        if let Some(input) = decode(&key) {
            if let Some(picked) = run.key(input)? {
                return Ok(picked);
            }
        }
    }
}

/// The picker at work: its state, the sessions it searches, the indexing thread's news.
struct Run {
    backend: Arc<dyn Sessions>,
    picker: Picker,
    /// The current directory's scope.
    here: Scope,
    indexing: mpsc::Receiver<Indexing>,
    /// When the query last changed, until its entries are searched.
    dirty: Option<Instant>,
    /// How far the indexing is, for the footer.
    progress: Option<String>,
}

impl Run {
    fn scope(&self) -> Scope {
        if self.picker.scope_all {
            Scope::All
        } else {
            self.here.clone()
        }
    }

    /// Takes in what the indexing thread said.
    fn news(&mut self) {
        while let Ok(msg) = self.indexing.try_recv() {
            match msg {
                Indexing::Percent(p) => self.progress = Some(format!("indexing entries {p}%")),
                Indexing::Done => {
                    self.progress = None;
                    // What was searched before may have missed entries indexed since.
                    if !self.picker.query().is_empty() {
                        self.dirty = Some(settled());
                    }
                }
                Indexing::Failed(e) => self.progress = Some(format!("indexing failed: {e}")),
            }
        }
        if self.picker.status.as_deref().is_none_or(|s| s.starts_with("indexing")) {
            self.picker.status = self.progress.clone();
        }
    }

    /// Searches the entries once typing has paused.
    fn search_when_settled(&mut self) {
        if self.dirty.is_none_or(|t| t.elapsed() < SETTLE) {
            return;
        }
        self.dirty = None;
        let query = self.picker.query().to_owned();
        // The index as it stands: the indexing thread brings it up to date meanwhile.
        let request = SearchRequest::new(query.as_str(), self.scope()).limit(HITS).as_is();
        let hits = if query.trim().is_empty() { Ok(vec![]) } else { self.backend.search(&request, &NoProgress) };
        match hits {
            Ok(h) => self.picker.set_hits(h),
            Err(e) => self.picker.status = Some(e.to_string()),
        }
    }

    /// Handles a key; `Some` when the picker is done.
    fn key(&mut self, input: Input) -> Result<Option<Picked>> {
        match self.picker.handle(input) {
            Outcome::None => {}
            Outcome::Quit => return Ok(Some(Picked::Left)),
            Outcome::QueryChanged => self.dirty = Some(Instant::now()),
            Outcome::ScopeChanged => {
                let listed = self.backend.listing(&ListRequest::new(self.scope()), &NoProgress)?;
                self.picker.set_sessions(listed);
                self.dirty = Some(settled());
            }
            Outcome::Open { path, at } => return Ok(Some(Picked::Session { path, at })),
        }
        Ok(None)
    }
}

/// A time typing is already known to have paused at: search now.
fn settled() -> Instant {
    let now = Instant::now();
    now.checked_sub(SETTLE).unwrap_or(now)
}

/// Keys → picker inputs.
fn decode(key: &KeyEvent) -> Option<Input> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    Some(match key.code {
        KeyCode::Char('c') if ctrl => Input::Escape,
        KeyCode::Char(_) if ctrl || key.modifiers.contains(KeyModifiers::ALT) => return None,
        KeyCode::Char(c) => Input::Char(c),
        KeyCode::Backspace => Input::Backspace,
        KeyCode::Up => Input::Up,
        KeyCode::Down => Input::Down,
        KeyCode::PageUp => Input::PageUp,
        KeyCode::PageDown => Input::PageDown,
        KeyCode::Home => Input::Home,
        KeyCode::End => Input::End,
        KeyCode::Enter => Input::Enter,
        KeyCode::Esc => Input::Escape,
        KeyCode::Tab | KeyCode::BackTab => Input::Tab,
        _ => return None,
    })
}

/// News from the indexing thread.
enum Indexing {
    Percent(u64),
    Done,
    Failed(String),
}

/// Indexing progress, sent to the picker.
struct Sender {
    tx: mpsc::Sender<Indexing>,
    total: std::cell::Cell<u64>,
    done: std::cell::Cell<u64>,
}

impl Progress for Sender {
    fn begin(&self, pass: Pass, _files: u64, bytes: u64) {
        if pass == Pass::Text {
            self.total.set(bytes.max(1));
            self.done.set(0);
        }
    }

    fn advance(&self, bytes: u64) {
        self.done.set(self.done.get() + bytes);
        let _ = self.tx.send(Indexing::Percent(self.done.get() * 100 / self.total.get().max(1)));
    }
}

/// Brings the search index of every session up to date on a thread of its
/// own; the picker searches what is indexed meanwhile. The thread ends with
/// the process when the picker is left before it is done.
fn start_indexing(backend: Arc<dyn Sessions>) -> mpsc::Receiver<Indexing> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let progress = Sender { tx: tx.clone(), total: 1.into(), done: 0.into() };
        let result = backend.update_index(&Scope::All, &progress);
        let _ = tx.send(match result {
            Ok(_) => Indexing::Done,
            Err(e) => Indexing::Failed(e.to_string()),
        });
    });
    rx
}
