//! How numbers of a report read to people: the terminal tables of `arbor
//! usage` and the usage view of `arbor serve` show them the same way.

/// A token count, short: `1234` as `1234`, `12345` as `12.3k`, `3400000` as `3.4M`.
pub fn short_count(n: u64) -> String {
    let f = n as f64;
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}k", f / 1e3),
        1_000_000..=999_999_999 => format!("{:.1}M", f / 1e6),
        _ => format!("{:.1}B", f / 1e9),
    }
}

/// A cost in dollars: cents below $1,000, whole dollars from there.
pub fn dollars(c: f64) -> String {
    if c >= 1000.0 {
        format!("${c:.0}")
    } else {
        format!("${c:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_costs_read_short() {
        assert_eq!(short_count(9_999), "9999");
        assert_eq!(short_count(12_345), "12.3k");
        assert_eq!(short_count(3_400_000), "3.4M");
        assert_eq!(short_count(2_500_000_000), "2.5B");
        assert_eq!(dollars(3.456), "$3.46");
        assert_eq!(dollars(1234.5), "$1234");
    }
}
