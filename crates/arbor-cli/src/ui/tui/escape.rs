//! Escape during a summary: while the tree selector's navigation summarizes,
//! the terminal stays in raw mode and a thread watches for Escape (or
//! Ctrl+C, which raw mode delivers as a key).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossterm::event::{self, Event, KeyCode, KeyModifiers};
use crossterm::terminal;

/// Raises a flag when Escape or Ctrl+C is pressed, until dropped.
pub struct EscapeWatch {
    pressed: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// Raw mode was switched on here (and is switched off again on drop).
    raw: bool,
}

impl EscapeWatch {
    /// Starts watching.
    pub fn start() -> EscapeWatch {
        let pressed = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        // Without a terminal (raw mode fails) Ctrl+C still arrives as SIGINT. The
        // selector's screen is in raw mode already, and stays so afterwards.
        let was_raw = terminal::is_raw_mode_enabled().unwrap_or(false);
        let raw = !was_raw && terminal::enable_raw_mode().is_ok();
        let thread = (raw || was_raw).then(|| {
            let (pressed, stop) = (pressed.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    if !event::poll(Duration::from_millis(25)).unwrap_or(false) {
                        continue;
                    }
                    if let Ok(Event::Key(k)) = event::read() {
                        let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                        if k.code == KeyCode::Esc || ctrl_c {
                            pressed.store(true, Ordering::SeqCst);
                        }
                    }
                }
            })
        });
        EscapeWatch { pressed, stop, thread, raw }
    }

    /// The flag raised by a press.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.pressed.clone()
    }
}

impl Drop for EscapeWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if self.raw {
            let _ = terminal::disable_raw_mode();
        }
    }
}
