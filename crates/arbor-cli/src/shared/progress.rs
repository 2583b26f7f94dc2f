//! A spinner with the elapsed time on stderr, for waits that show nothing
//! else: a model writing a summary or a compaction, a big file opened for
//! the first time. Drawn only when stderr is a terminal, and cleared when
//! the wait ends, so scripts and pipes never see it.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
