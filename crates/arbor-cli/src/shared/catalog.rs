//! What `ls`, `search` and the session picker share: the catalog of the
//! sessions root opened and refreshed, its warnings on stderr, and a progress
//! bar on stderr while a refresh takes long.

use std::cell::{Cell, RefCell};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::shared::visible::say;
use arbor_catalog::{Catalog, Pass, Progress, Scope};
use arbor_tree::SessionListInfo;

/// Opens the catalog of `root`, printing its warnings.
pub(crate) fn open(root: &Path) -> Result<Catalog> {
    let mut catalog = Catalog::open(root)?;
    warn(&mut catalog);
    Ok(catalog)
}

/// Prints the catalog's warnings to stderr, one line each.
pub(crate) fn warn(catalog: &mut Catalog) {
    for w in catalog.take_warnings() {
        say!("arbor: warning: {w}");
    }
}

/// Refreshes the listing facts of `scope` and returns its sessions, newest
/// first; with `texts`, each with pi's `allMessagesText` (read from the files).
pub(crate) fn list(root: &Path, scope: &Scope, texts: bool) -> Result<Vec<SessionListInfo>> {
    let mut catalog = open(root)?;
    let bar = Bar::new();
    catalog.refresh(scope, &bar)?;
    let mut list = catalog.sessions(scope)?;
    warn(&mut catalog);
    if texts {
        fill_texts(&mut list)?;
    }
    Ok(list)
}

/// Fills `all_messages_text` on all cores. A session deleted since the
/// listing is left out; one that cannot be read is left out with a warning.
fn fill_texts(list: &mut Vec<SessionListInfo>) -> Result<()> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
    let chunk = list.len().div_ceil(threads).max(1);
    let gone: Vec<bool> = std::thread::scope(|s| {
        let handles: Vec<_> = list
            .chunks_mut(chunk)
            .map(|part| {
                s.spawn(move || -> Vec<bool> {
                    part.iter_mut()
                        .map(|info| match arbor_catalog::all_messages_text(&info.path) {
                            Ok(text) => {
                                info.all_messages_text = text;
                                false
                            }
                            Err(e) => {
                                if e.kind() != std::io::ErrorKind::NotFound {
                                    say!("arbor: warning: cannot read {} ({e}); it is left out", info.path.display());
                                }
                                true
                            }
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| anyhow::anyhow!("a reader thread panicked")))
            .collect::<Result<Vec<Vec<bool>>>>()
    })?
    .into_iter()
    .flatten()
    .collect();
    let mut gone = gone.into_iter();
    list.retain(|_| !gone.next().unwrap_or(false));
    Ok(())
}

/// A progress bar on stderr that shows only when a pass runs longer than
/// half a second and stderr is a terminal.
#[derive(Debug)]
pub(crate) struct Bar {
    started: Cell<Option<Instant>>,
    pass: Cell<Pass>,
    total: Cell<u64>,
    done: Cell<u64>,
    bar: RefCell<Option<ProgressBar>>,
}

const SHOW_AFTER: Duration = Duration::from_millis(500);

impl Bar {
    pub(crate) fn new() -> Bar {
        Bar {
            started: Cell::new(None),
            pass: Cell::new(Pass::Listing),
            total: Cell::new(0),
            done: Cell::new(0),
            bar: RefCell::new(None),
        }
    }
}

impl Progress for Bar {
    fn begin(&self, pass: Pass, _files: u64, bytes: u64) {
        self.started.set(Some(Instant::now()));
        self.pass.set(pass);
        self.total.set(bytes);
        self.done.set(0);
    }

    fn advance(&self, bytes: u64) {
        self.done.set(self.done.get() + bytes);
        let mut bar = self.bar.borrow_mut();
        if bar.is_none() && self.started.get().is_some_and(|t| t.elapsed() > SHOW_AFTER) {
            let b = ProgressBar::with_draw_target(Some(self.total.get()), ProgressDrawTarget::stderr());
            let what = match self.pass.get() {
                Pass::Listing => "cataloging sessions",
                Pass::Text => "searching session text",
            };
            if let Ok(style) = ProgressStyle::with_template("{msg} {wide_bar} {bytes}/{total_bytes} {eta}") {
                b.set_style(style);
            }
            b.set_message(what);
            *bar = Some(b);
        }
        if let Some(b) = bar.as_ref() {
            b.set_position(self.done.get());
        }
    }

    fn end(&self) {
        if let Some(b) = self.bar.borrow_mut().take() {
            b.finish_and_clear();
        }
        self.started.set(None);
    }
}
