//! The session picker: `arbor tui` and `arbor chat` without a file (pi's
//! `/resume`). The sessions of the current directory (Tab: of every
//! directory) from the backend the sessions live in (the catalog of the
//! sessions root, or the server), newest first, with their name or first
//! message, age and message count; typing searches the text of every entry
//! (the backend's search) and shows the sessions holding it first, then the
//! entries, then the sessions that match only on their id, name, first
//! message or cwd (pi's picker rule). Enter picks a session, or an entry of
//! one; Ctrl+U clears the query.
//!
//! The listing is refreshed before the picker shows. Searches run on a
//! thread of their own: hits show as the search finds them (a first search
//! over files reads every file, so its hits come session by session), and a
//! search is stopped as soon as the query changes. The state machine is
//! [`state`], the drawing [`view`]; this module owns the terminal and the
//! sessions.

mod state;
mod view;

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::Result;
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use arbor_tree::sessions::{Flow, Hit, ListRequest, NoProgress, Pass, Progress, Scope, SearchRequest, Sessions};

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
const SETTLE: Duration = Duration::from_millis(80);

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
    let searcher = Searcher::start(backend.clone());
    let _guard = TerminalGuard::enter()?;
    let mut term = Terminal::new(CrosstermBackend::new(io::stderr()))?;
    term.clear()?;
    let height = term.size().map_or(24, |s| s.height);
    let picker = Picker::new(sessions, scope_all, usize::from(height.saturating_sub(view::CHROME)));
    let mut run = Run { backend, picker, here, searcher, dirty: None, progress: None };
    let home = home();
    loop {
        run.news();
        run.search_when_settled();
        term.draw(|f| {
            let area = f.area();
            view::draw(&run.picker, home.as_deref(), area, f.buffer_mut());
        })?;
        if !event::poll(Duration::from_millis(30))? {
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

/// The picker at work: its state, the sessions it lists from, the search thread.
struct Run {
    backend: Arc<dyn Sessions>,
    picker: Picker,
    /// The current directory's scope.
    here: Scope,
    searcher: Searcher,
    /// When the query last changed, until it is searched.
    dirty: Option<Instant>,
    /// How far the search is, for the footer.
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

    /// Takes in what the search thread found for the current query.
    fn news(&mut self) {
        while let Ok(msg) = self.searcher.news.try_recv() {
            if msg.gen() != self.searcher.asked {
                continue;
            }
            match msg {
                News::Hits(_, hits) => self.picker.add_hits(hits),
                News::Percent(_, p) => self.progress = Some(format!("searching… {p}%")),
                News::Done(_, warning) => self.progress = warning,
            }
        }
        if self.picker.status.as_deref().is_none_or(|s| !s.starts_with("invalid query")) {
            self.picker.status = self.progress.clone();
        }
    }

    /// Searches the entries once typing has paused.
    fn search_when_settled(&mut self) {
        if self.dirty.is_none_or(|t| t.elapsed() < SETTLE) {
            return;
        }
        self.dirty = None;
        let query = self.picker.query().trim().to_owned();
        self.progress = None;
        self.searcher.ask((!query.is_empty()).then(|| (query, self.scope())));
    }

    /// Handles a key; `Some` when the picker is done.
    fn key(&mut self, input: Input) -> Result<Option<Picked>> {
        match self.picker.handle(input) {
            Outcome::None => {}
            Outcome::Quit => return Ok(Some(Picked::Left)),
            Outcome::QueryChanged => {
                // The search under way is for another query now: stop it.
                self.searcher.ask(None);
                self.progress = None;
                self.dirty = Some(Instant::now());
            }
            Outcome::ScopeChanged => {
                // The search under way is for the other scope: stop it before listing.
                self.searcher.ask(None);
                let listed = self.backend.listing(&ListRequest::new(self.scope()), &NoProgress)?;
                self.picker.set_sessions(listed);
                backend::warn(self.backend.as_ref());
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
        KeyCode::Char('u') if ctrl => Input::Clear,
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

/// News from the search thread, for the search number it carries.
enum News {
    Hits(u64, Vec<Hit>),
    Percent(u64, u64),
    /// The search ended (with a line for the footer when it failed or warned).
    Done(u64, Option<String>),
}

impl News {
    fn gen(&self) -> u64 {
        match self {
            News::Hits(g, _) | News::Percent(g, _) | News::Done(g, _) => *g,
        }
    }
}

/// The search thread: it takes the newest query asked, searches the
/// backend, and stops when a newer one is asked.
struct Searcher {
    asks: mpsc::Sender<(u64, Option<(String, Scope)>)>,
    news: mpsc::Receiver<News>,
    /// The number of the newest query asked (the thread stops older searches).
    newest: Arc<AtomicU64>,
    /// The number of the query whose news the picker shows.
    asked: u64,
}

impl Searcher {
    /// Starts the thread; it ends when the picker is dropped (its channel closes).
    fn start(backend: Arc<dyn Sessions>) -> Searcher {
        let (asks, inbox) = mpsc::channel::<(u64, Option<(String, Scope)>)>();
        let (tell, news) = mpsc::channel();
        let newest = Arc::new(AtomicU64::new(0));
        let latest = Arc::clone(&newest);
        std::thread::spawn(move || {
            while let Ok(mut job) = inbox.recv() {
                // Only the newest query matters.
                while let Ok(newer) = inbox.try_recv() {
                    job = newer;
                }
                let (gen, Some((query, scope))) = job else { continue };
                let progress = Percent { tell: tell.clone(), gen, total: 1.into(), done: 0.into() };
                let request = SearchRequest::new(query, scope).limit(HITS);
                let result = backend.search_each(&request, &progress, &mut |hits| {
                    if !hits.is_empty() {
                        let _ = tell.send(News::Hits(gen, hits.to_vec()));
                    }
                    if latest.load(Ordering::Relaxed) == gen {
                        Flow::Go
                    } else {
                        Flow::Stop
                    }
                });
                let warning = match result {
                    Ok(_) => backend.take_warnings().pop(),
                    Err(e) => Some(e.to_string()),
                };
                let _ = tell.send(News::Done(gen, warning));
            }
        });
        Searcher { asks, news, newest, asked: 0 }
    }

    /// Asks for a search of `query` in `scope`, or (with `None`) for none: the one under way stops.
    fn ask(&mut self, what: Option<(String, Scope)>) {
        self.asked = self.newest.fetch_add(1, Ordering::Relaxed) + 1;
        let _ = self.asks.send((self.asked, what));
    }
}

/// A search's progress, sent to the picker.
struct Percent {
    tell: mpsc::Sender<News>,
    gen: u64,
    total: std::cell::Cell<u64>,
    done: std::cell::Cell<u64>,
}

impl Progress for Percent {
    fn begin(&self, pass: Pass, _files: u64, bytes: u64) {
        if pass == Pass::Text {
            self.total.set(bytes.max(1));
            self.done.set(0);
        }
    }

    fn advance(&self, bytes: u64) {
        self.done.set(self.done.get() + bytes);
        let _ = self.tell.send(News::Percent(self.gen, self.done.get() * 100 / self.total.get().max(1)));
    }
}
