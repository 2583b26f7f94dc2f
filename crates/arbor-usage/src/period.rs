//! Days, weeks and months in a time zone: which period a reply falls in,
//! and the `--since`/`--until` dates.

use jiff::civil::{Date, Weekday};
use jiff::tz::TimeZone;
use jiff::Timestamp;

use crate::error::UsageError;

/// A time zone by its IANA name (`Europe/Berlin`, `UTC`).
pub fn zone(name: &str) -> Result<TimeZone, UsageError> {
    TimeZone::get(name).map_err(|e| UsageError::Zone { name: name.to_owned(), reason: e.to_string() })
}

/// A date written `YYYY-MM-DD` or `YYYYMMDD`.
pub fn parse_date(text: &str) -> Result<Date, UsageError> {
    let bad = || UsageError::Date { value: text.to_owned() };
    let t = text.trim();
    let digits: String = match t.len() {
        8 => t.to_owned(),
        10 if t.as_bytes()[4] == b'-' && t.as_bytes()[7] == b'-' => t.replace('-', ""),
        _ => return Err(bad()),
    };
    if digits.len() != 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n = |r: std::ops::Range<usize>| digits[r].parse::<i16>().map_err(|_| bad());
    let (y, m, d) = (n(0..4)?, n(4..6)?, n(6..8)?);
    Date::new(y, i8::try_from(m).map_err(|_| bad())?, i8::try_from(d).map_err(|_| bad())?).map_err(|_| bad())
}

/// The day a time (ms since the epoch) falls on in `zone`.
pub fn day_of(ms: i64, zone: &TimeZone) -> Date {
    match Timestamp::from_millisecond(ms) {
        Ok(t) => t.to_zoned(zone.clone()).date(),
        Err(_) => Date::constant(1970, 1, 1),
    }
}

/// [`day_of`] for many times in a row: the last day's bounds in the zone are
/// kept, so times on the same day (a session's replies) need no zone lookup.
#[derive(Debug)]
pub(crate) struct Days<'a> {
    zone: &'a TimeZone,
    /// The last day, and the times (ms) it runs from (included) to (excluded).
    last: Option<(Date, i64, i64)>,
}

impl<'a> Days<'a> {
    pub(crate) fn new(zone: &'a TimeZone) -> Days<'a> {
        Days { zone, last: None }
    }

    /// The day `ms` falls on, as [`day_of`] says.
    pub(crate) fn of(&mut self, ms: i64) -> Date {
        if let Some((day, from, to)) = self.last {
            if (from..to).contains(&ms) {
                return day;
            }
        }
        let day = day_of(ms, self.zone);
        let start = |d: Date| d.to_zoned(self.zone.clone()).ok().map(|z| z.timestamp().as_millisecond());
        self.last = match (start(day), day.tomorrow().ok().and_then(start)) {
            (Some(from), Some(to)) if (from..to).contains(&ms) => Some((day, from, to)),
            _ => None,
        };
        day
    }
}

/// The first day of the week holding `day`, weeks starting on `start`.
pub fn week_of(day: Date, start: Weekday) -> Date {
    let back = day.weekday().since(start);
    day.checked_sub(jiff::Span::new().days(i64::from(back))).unwrap_or(day)
}

/// `YYYY-MM-DD`.
pub fn day_text(day: Date) -> String {
    format!("{:04}-{:02}-{:02}", day.year(), day.month(), day.day())
}

/// `YYYY-MM`.
pub fn month_text(day: Date) -> String {
    format!("{:04}-{:02}", day.year(), day.month())
}

/// A time (ms since the epoch) as ISO 8601 in UTC with milliseconds.
pub fn iso(ms: i64) -> String {
    arbor_log::time::format_iso_ms(ms)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn dates_in_both_spellings_and_bad_ones_refused() {
        assert_eq!(parse_date("2026-03-01").unwrap(), Date::constant(2026, 3, 1));
        assert_eq!(parse_date("20260301").unwrap(), Date::constant(2026, 3, 1));
        for bad in ["2026-13-01", "2026-02-30", "yesterday", "2026/03/01", ""] {
            assert!(parse_date(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_time_falls_on_its_zones_day_and_weeks_start_where_told() {
        // 2026-03-01T02:30Z is still February 28th in New York.
        let ms = 1_772_332_200_000;
        assert_eq!(day_text(day_of(ms, &TimeZone::UTC)), "2026-03-01");
        assert_eq!(day_text(day_of(ms, &zone("America/New_York").unwrap())), "2026-02-28");
        assert_eq!(day_text(day_of(ms, &zone("Asia/Kolkata").unwrap())), "2026-03-01");
        // 2026-03-04 is a Wednesday.
        let wed = Date::constant(2026, 3, 4);
        assert_eq!(week_of(wed, Weekday::Sunday), Date::constant(2026, 3, 1));
        assert_eq!(week_of(wed, Weekday::Monday), Date::constant(2026, 3, 2));
        assert_eq!(week_of(Date::constant(2026, 3, 1), Weekday::Sunday), Date::constant(2026, 3, 1));
        assert!(zone("Mars/Olympus").is_err());
    }

    #[test]
    fn days_in_a_row_are_the_days_one_by_one_across_offsets_and_dst() {
        // Every 7 minutes over New York's and Berlin's spring change and Kolkata's half hours.
        for name in ["America/New_York", "Europe/Berlin", "Asia/Kolkata", "Asia/Kathmandu", "UTC"] {
            let z = zone(name).unwrap();
            let mut days = Days::new(&z);
            let start = 1_772_900_000_000i64; // 2026-03-07
            for k in 0..6_000 {
                let ms = start + k * 7 * 60_000;
                assert_eq!(days.of(ms), day_of(ms, &z), "{name} at {ms}");
            }
            // And back in time.
            assert_eq!(days.of(start - 86_400_000), day_of(start - 86_400_000, &z));
        }
    }
}
