//! What the status line says while something runs (a reply, a summary, a
//! compaction, a shell command): a spinner, what it is, the time since it
//! began and, while a model call waits to be retried, `Retrying (n/m) in Ns`.

use std::time::{Duration, Instant};

use arbor_agent::model::RetryNotice;

/// The spinner's frames, one every 100 ms.
const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// One operation's progress.
#[derive(Debug, Clone)]
pub struct Progress {
    what: String,
    cancel: &'static str,
    since: Instant,
    /// The retry told last, and when its wait ends.
    retry: Option<(u32, u32, Instant)>,
}

impl Progress {
    /// `what` (`Waiting for the model…`) begins now; `cancel` says how to stop it (`Esc to abort`).
    pub fn new(what: &str, cancel: &'static str, now: Instant) -> Progress {
        Progress { what: what.to_owned(), cancel, since: now, retry: None }
    }

    /// What runs changed (`Streaming…`); a retry's notice goes.
    pub fn set(&mut self, what: &str) {
        if self.what != what || self.retry.is_some() {
            self.what = what.to_owned();
            self.retry = None;
        }
    }

    /// A retry was told.
    pub fn retry(&mut self, n: &RetryNotice, now: Instant) {
        self.retry = Some((n.attempt, n.max, now + n.delay));
    }

    /// The status line at `now`: `⠹ Waiting for the model… 7s · Retrying (2/3) in 3s (Esc to abort)`.
    pub fn line(&self, now: Instant) -> String {
        let elapsed = now.saturating_duration_since(self.since);
        let frame = FRAMES[(elapsed.as_millis() / 100) as usize % FRAMES.len()];
        let retry = match self.retry {
            Some((n, m, until)) => {
                let left = until.saturating_duration_since(now);
                let secs = left.as_secs() + u64::from(left.subsec_nanos() > 0);
                if left > Duration::ZERO {
                    format!(" · Retrying ({n}/{m}) in {secs}s")
                } else {
                    format!(" · Retrying ({n}/{m})")
                }
            }
            None => String::new(),
        };
        format!("{frame} {} {}s{retry} ({})", self.what, elapsed.as_secs(), self.cancel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spinner_elapsed_and_retries() {
        let t0 = Instant::now();
        let mut p = Progress::new("Waiting for the model…", "Esc to abort", t0);
        assert_eq!(p.line(t0), "⠋ Waiting for the model… 0s (Esc to abort)");
        assert_eq!(p.line(t0 + Duration::from_millis(2150)), "⠙ Waiting for the model… 2s (Esc to abort)");
        let n = RetryNotice { attempt: 2, max: 3, delay: Duration::from_secs(4), reason: "HTTP 503".into() };
        p.retry(&n, t0 + Duration::from_secs(3));
        assert_eq!(
            p.line(t0 + Duration::from_millis(3500)),
            "⠴ Waiting for the model… 3s · Retrying (2/3) in 4s (Esc to abort)"
        );
        assert!(p.line(t0 + Duration::from_secs(8)).contains("Retrying (2/3) ("));
        p.set("Streaming…");
        assert_eq!(p.line(t0 + Duration::from_secs(9)), "⠋ Streaming… 9s (Esc to abort)");
    }
}
