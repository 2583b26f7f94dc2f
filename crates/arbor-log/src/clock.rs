//! Time: an injectable clock and the reference's ISO timestamp rules.
//!
//! Entry timestamps are `Date.prototype.toISOString()` output (UTC, milliseconds).
//! Sorting and message timestamps use `Date.parse`, which we follow for the
//! ISO forms pi writes and reads; anything else is "not a date" (NaN in JS).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// A source of the current time in Unix epoch milliseconds.
///
/// ```
/// use arbor_log::{Clock, FixedClock, SystemClock};
///
/// // Injected wherever time is written, so tests are deterministic.
/// let clock: &dyn Clock = &FixedClock::new(1_000, 10);
/// assert_eq!((clock.now_ms(), clock.now_ms()), (1_000, 1_010));
/// assert!(SystemClock.now_ms() > 1_700_000_000_000);
/// ```
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Now, in epoch milliseconds.
    fn now_ms(&self) -> i64;
}

/// The system clock.
///
/// ```
/// use arbor_log::{Clock, SystemClock};
///
/// assert!(SystemClock.now_ms() > 1_700_000_000_000);
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        let now = OffsetDateTime::now_utc();
        (now.unix_timestamp_nanos() / 1_000_000) as i64
    }
}

impl SystemClock {
    /// Now in epoch milliseconds (inherent shorthand for [`Clock::now_ms`]).
    pub fn now_ms_value(self) -> i64 {
        Clock::now_ms(&self)
    }
}

/// A clock for tests: starts at a given instant and advances by `step_ms` on each read.
///
/// ```
/// use arbor_log::{Clock, FixedClock};
///
/// let clock = FixedClock::new(1_767_225_600_000, 1);
/// assert_eq!(clock.now_ms(), 1_767_225_600_000);
/// assert_eq!(clock.now_ms(), 1_767_225_600_001);
/// ```
#[derive(Debug, Clone)]
pub struct FixedClock {
    now: Arc<AtomicI64>,
    step_ms: i64,
}

impl FixedClock {
    /// A clock at `start_ms` that advances `step_ms` per reading.
    pub fn new(start_ms: i64, step_ms: i64) -> Self {
        Self { now: Arc::new(AtomicI64::new(start_ms)), step_ms }
    }
}

impl Clock for FixedClock {
    fn now_ms(&self) -> i64 {
        self.now.fetch_add(self.step_ms, Ordering::SeqCst)
    }
}

/// Formats epoch milliseconds as `YYYY-MM-DDTHH:mm:ss.sssZ`, like `toISOString()`.
pub fn format_iso_ms(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    match OffsetDateTime::from_unix_timestamp_nanos(nanos) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second(),
            t.millisecond()
        ),
        Err(_) => "1970-01-01T00:00:00.000Z".to_owned(),
    }
}

/// Parses an ISO timestamp to epoch milliseconds, as `Date.parse` does for the
/// forms that occur in session files; `None` where JavaScript gives NaN.
///
/// Accepted: RFC 3339 with `Z` or an offset (fraction optional), and a bare
/// date `YYYY-MM-DD` (midnight UTC, as JavaScript reads date-only forms).
pub fn parse_iso_ms(s: &str) -> Option<i64> {
    if let Ok(t) = OffsetDateTime::parse(s, &Rfc3339) {
        return Some((t.unix_timestamp_nanos() / 1_000_000) as i64);
    }
    // Date.parse also accepts a lower-case `z` and a missing seconds part is not
    // ISO; only the date-only form is common enough to matter.
    let b = s.as_bytes();
    if b.len() == 10 && b[4] == b'-' && b[7] == b'-' {
        let with_time = format!("{s}T00:00:00Z");
        if let Ok(t) = OffsetDateTime::parse(&with_time, &Rfc3339) {
            return Some((t.unix_timestamp_nanos() / 1_000_000) as i64);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_round_trip() {
        let ms = parse_iso_ms("2025-11-20T23:33:01.550Z");
        assert_eq!(ms, Some(1_763_681_581_550));
        assert_eq!(format_iso_ms(1_763_681_581_550), "2025-11-20T23:33:01.550Z");
    }

    #[test]
    fn date_parse_forms() {
        assert_eq!(parse_iso_ms("2025-01-01T00:00:00Z"), Some(1_735_689_600_000));
        assert_eq!(parse_iso_ms("2025-01-01"), Some(1_735_689_600_000));
        assert_eq!(parse_iso_ms("2025-01-01T01:00:00.000+01:00"), Some(1_735_689_600_000));
        assert_eq!(parse_iso_ms("yesterday"), None);
        assert_eq!(parse_iso_ms(""), None);
    }

    #[test]
    fn fixed_clock_advances() {
        let c = FixedClock::new(1000, 5);
        assert_eq!(c.now_ms(), 1000);
        assert_eq!(c.now_ms(), 1005);
    }
}
