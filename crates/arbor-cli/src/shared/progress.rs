//! Waits shown on stderr: a spinner with the elapsed time, for waits that
//! show nothing else (a model writing a summary or a compaction, a big file
//! opened for the first time), and a progress bar for a pass over many
//! sessions ([`Bar`]: cataloging, searching). Drawn only when stderr is a
//! terminal, and cleared when the wait ends, so scripts and pipes never see them.

use std::cell::{Cell, RefCell};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arbor_tree::sessions::{Pass, Progress};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A spinner on stderr; it goes away when dropped.
#[derive(Debug)]
pub struct Spinner {
    bar: Arc<Mutex<Option<ProgressBar>>>,
    done: Arc<AtomicBool>,
}

impl Spinner {
    /// `⠙ MESSAGE 3sSUFFIX` on stderr from now on (when it is a terminal).
    pub fn now(message: &str, suffix: &str) -> Spinner {
        Spinner::after(Duration::ZERO, message, suffix)
    }

    /// The same, shown only once `delay` has passed (a wait that ends sooner shows nothing).
    pub fn after(delay: Duration, message: &str, suffix: &str) -> Spinner {
        let spinner = Spinner { bar: Arc::default(), done: Arc::default() };
        if !std::io::stderr().is_terminal() {
            return spinner;
        }
        let (bar, done) = (spinner.bar.clone(), spinner.done.clone());
        let (message, suffix) = (message.to_owned(), suffix.to_owned());
        let show = move || {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}{prefix}") {
                b.set_style(style);
            }
            b.set_message(message);
            b.set_prefix(suffix);
            b.enable_steady_tick(Duration::from_millis(100));
            b
        };
        if delay.is_zero() {
            if let Ok(mut slot) = bar.lock() {
                *slot = Some(show());
            }
        } else {
            std::thread::spawn(move || {
                std::thread::sleep(delay);
                if let Ok(mut slot) = bar.lock() {
                    if !done.load(Ordering::SeqCst) {
                        *slot = Some(show());
                    }
                }
            });
        }
        spinner
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Ok(mut slot) = self.bar.lock() {
            if let Some(b) = slot.take() {
                b.finish_and_clear();
            }
        }
    }
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
