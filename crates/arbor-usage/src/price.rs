//! Arbor's price table: what a reply costs when its session recorded no
//! cost. The figures are ours, in `prices.json` beside this file (USD per
//! million tokens, the providers' published list prices; docs/usage.md
//! says where each comes from and how to update them). Nothing is fetched:
//! a report prices offline, always the same way.

use std::collections::HashMap;

use serde::Deserialize;

use crate::error::UsageError;
use crate::model::Tokens;

const BUILTIN: &str = include_str!("prices.json");

/// Rates in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rates {
    /// Input not read from the cache.
    pub input: f64,
    /// Output.
    pub output: f64,
    /// Input written to the cache.
    pub cache_write: f64,
    /// Input read from the cache.
    pub cache_read: f64,
}

impl Rates {
    fn cost(&self, t: &Tokens) -> f64 {
        let per = |n: u64, rate: f64| n as f64 * rate / 1_000_000.0;
        per(t.input, self.input)
            + per(t.output, self.output)
            + per(t.cache_write, self.cache_write)
            + per(t.cache_read, self.cache_read)
    }
}

/// One model's prices.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Price {
    /// The model id as its provider names it, without a date suffix.
    pub model: String,
    /// The provider.
    pub provider: String,
    /// The rates.
    #[serde(flatten)]
    pub rates: Rates,
    /// Above this many prompt tokens (input, cache read and cache write
    /// together), the whole reply is priced at [`Price::long_context`].
    #[serde(default)]
    pub long_context_above: Option<u64>,
    /// The long-context rates.
    #[serde(default)]
    pub long_context: Option<Rates>,
}

impl Price {
    /// What `tokens` cost at these prices.
    pub fn cost(&self, tokens: &Tokens) -> f64 {
        let prompt = tokens.input.saturating_add(tokens.cache_read).saturating_add(tokens.cache_write);
        match (self.long_context_above, &self.long_context) {
            (Some(above), Some(long)) if prompt > above => long.cost(tokens),
            _ => self.rates.cost(tokens),
        }
    }
}

#[derive(Debug, Deserialize)]
struct TableFile {
    updated: String,
    models: Vec<Price>,
}

/// Prices by model.
#[derive(Debug, Clone)]
pub struct PriceTable {
    updated: String,
    by_name: HashMap<String, Price>,
}

impl PriceTable {
    /// The table Arbor ships (`prices.json`).
    pub fn builtin() -> PriceTable {
        // The shipped table is checked by a test; a broken one prices nothing.
        PriceTable::from_json(BUILTIN)
            .unwrap_or_else(|_| PriceTable { updated: String::new(), by_name: HashMap::new() })
    }

    /// A table in the shape of `prices.json`.
    pub fn from_json(text: &str) -> Result<PriceTable, UsageError> {
        let file: TableFile = serde_json::from_str(text).map_err(|e| UsageError::Prices { reason: e.to_string() })?;
        let by_name = file.models.into_iter().map(|p| (normalize(&p.model), p)).collect();
        Ok(PriceTable { updated: file.updated, by_name })
    }

    /// The day the figures were last checked (`YYYY-MM-DD`).
    pub fn updated(&self) -> &str {
        &self.updated
    }

    /// The prices of `model`: its name as a provider or an agent writes it
    /// (`claude-sonnet-4-5-20250929`, `anthropic/claude-sonnet-4.5`), matched
    /// without provider prefix, date suffix or the dots of a version.
    pub fn find(&self, model: &str) -> Option<&Price> {
        let key = normalize(model);
        self.by_name.get(&key).or_else(|| self.by_name.get(strip_date(&key)))
    }

    /// What a reply of `model` with `tokens` costs, if the table knows the model.
    pub fn cost(&self, model: &str, tokens: &Tokens) -> Option<f64> {
        self.find(model).map(|p| p.cost(tokens))
    }
}

/// Lower case, without a `provider/` prefix, dots as dashes.
fn normalize(model: &str) -> String {
    let name = model.rsplit('/').next().unwrap_or(model).trim();
    name.to_ascii_lowercase().replace(['.', '@'], "-")
}

/// Without a trailing `-YYYYMMDD` or `-YYYY-MM-DD` date.
fn strip_date(name: &str) -> &str {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((head, tail)) = name.rsplit_once('-') {
        if tail.len() == 8 && digits(tail) {
            return head;
        }
    }
    let parts: Vec<&str> = name.rsplitn(4, '-').collect();
    if let [d, m, y, head] = parts.as_slice() {
        if y.len() == 4 && m.len() == 2 && d.len() == 2 && digits(y) && digits(m) && digits(d) {
            return head;
        }
    }
    name
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_shipped_table_reads_and_names_every_model_once() {
        let file: TableFile = serde_json::from_str(BUILTIN).unwrap();
        let table = PriceTable::builtin();
        assert_eq!(table.by_name.len(), file.models.len(), "a model listed twice");
        assert!(table.updated().len() == 10, "{}", table.updated());
    }

    #[test]
    fn names_are_matched_without_prefix_date_or_dots() {
        let t = PriceTable::builtin();
        for name in
            ["claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "anthropic/claude-sonnet-4.5", "Claude-Sonnet-4-5"]
        {
            assert_eq!(t.find(name).map(|p| p.model.as_str()), Some("claude-sonnet-4-5"), "{name}");
        }
        assert_eq!(t.find("gpt-5-mini-2025-08-07").map(|p| p.model.as_str()), Some("gpt-5-mini"));
        assert_eq!(t.find("gpt-5").map(|p| p.model.as_str()), Some("gpt-5"));
        assert!(t.find("no-such-model").is_none());
    }

    #[test]
    fn a_long_prompt_is_priced_whole_at_the_long_context_rates() {
        let t = PriceTable::builtin();
        let short = Tokens { input: 100_000, output: 1_000, cache_read: 0, cache_write: 0 };
        let long = Tokens { input: 100_000, output: 1_000, cache_read: 150_000, cache_write: 0 };
        let c = t.cost("claude-sonnet-4-5", &short).unwrap();
        assert!((c - (0.3 + 0.015)).abs() < 1e-9, "{c}");
        let c = t.cost("claude-sonnet-4-5", &long).unwrap();
        assert!((c - (0.6 + 0.0225 + 0.09)).abs() < 1e-9, "{c}");
    }
}
