//! Owning the terminal: raw mode and the alternate screen on stderr,
//! restored on drop and on panic; the key events the selectors read.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;
use std::time::Duration;

use anyhow::{Context as _, Result};
use crossterm::event::{Event, KeyEvent, KeyEventKind};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

/// The terminal the front ends draw on: stderr, so stdout stays free for output.
pub type Term = Terminal<CrosstermBackend<io::Stderr>>;

/// True while the terminal is in raw mode on the alternate screen.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Puts the terminal back on drop: leaves raw mode and the alternate screen.
#[derive(Debug)]
pub struct TerminalGuard;

impl TerminalGuard {
    /// Switches to raw mode and the alternate screen (and restores them on a panic).
    pub fn enter() -> Result<TerminalGuard> {
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

/// The next terminal event: from the terminal for `arbor tui`, a channel
/// for `arbor chat`. Given a wait, `None` when nothing came in that time;
/// given none, it waits for an event (a source that wakes up anyway, such as
/// `--follow`'s, may still answer `None`).
pub type NextEvent<'a> = &'a mut dyn FnMut(Option<Duration>) -> Result<Option<Event>>;

/// The event as a key press (`None` for releases and anything else).
pub fn read_key(event: Event) -> Option<KeyEvent> {
    match event {
        Event::Key(key) if key.kind != KeyEventKind::Release => Some(key),
        _ => None,
    }
}

/// The text of a buffer, one line per row, trailing spaces trimmed (for tests and e2e checks).
#[cfg(test)]
pub fn buffer_text(buf: &ratatui::buffer::Buffer) -> String {
    use unicode_width::UnicodeWidthStr;
    let area = buf.area;
    let mut out = String::new();
    for y in 0..area.height {
        let mut line = String::new();
        let mut skip = 0;
        for x in 0..area.width {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let sym = buf[(area.x + x, area.y + y)].symbol();
            skip = sym.width().saturating_sub(1);
            line.push_str(sym);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
