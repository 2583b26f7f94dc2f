//! A generated session store: many sessions laid out as pi lays them out
//! (`ROOT/--encoded-cwd--/<timestamp>_<id>.jsonl`), deterministic for a seed.
//!
//! Sessions have 50 to 2,000 entries, log-uniformly (most are short, a few
//! are long; 1,000 sessions are about 1.5 GB), the realistic shape of
//! [`crate::gen`], spread over a year and over a few dozen project
//! directories. Each draws a handful of topic words from a vocabulary of
//! made-up words (some common, most rare), so a search for a word finds what
//! a real store gives: a few sessions, not every entry.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::gen::{generate_placed, GenOptions, Placement, Rng, Shape};

/// Bump when the bytes of a store for given (sessions, seed, entries) change.
pub const STORE_VERSION: u32 = 1;

/// The fewest and most entries of a generated session.
pub const MIN_ENTRIES: usize = 50;
pub const MAX_ENTRIES: usize = 2000;

/// 2025-01-01T00:00:00Z: the first session starts a year before the bench sessions.
const YEAR_START_MS: i64 = 1_735_689_600_000;
const YEAR_MS: i64 = 365 * 86_400_000;

/// Syllables of the topic vocabulary: 20 × 20 × 20 three-syllable words.
const SYLLABLES: [&str; 20] = [
    "ka", "lo", "ri", "ven", "mo", "tas", "qui", "dor", "sel", "pha", "gru", "nim", "bex", "zo", "tal", "wen", "cor",
    "lu", "fey", "dra",
];

/// The made-up word number `k` (distinct for `k < 8000`).
pub fn topic_word(k: usize) -> String {
    let n = SYLLABLES.len();
    format!("{}{}{}", SYLLABLES[k % n], SYLLABLES[k / n % n], SYLLABLES[k / n / n % n])
}

/// What a store holds.
#[derive(Debug, Clone, Copy, Default)]
pub struct StoreStats {
    pub sessions: usize,
    pub entries: usize,
    pub bytes: u64,
}

/// How many entries the sessions of a store have: log-uniformly between the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    pub min: usize,
    pub max: usize,
}

impl Sizes {
    /// `MIN-MAX` as a command line gives it (`flag` names it in errors).
    pub fn parse(text: &str, flag: &str) -> Result<Sizes> {
        let (a, b) = text.split_once('-').with_context(|| format!("{flag} MIN-MAX, not {text:?}"))?;
        let sizes = Sizes { min: a.parse().context(flag.to_owned())?, max: b.parse().context(flag.to_owned())? };
        if sizes.min == 0 || sizes.min > sizes.max {
            anyhow::bail!("{flag}: MIN must be at least 1 and at most MAX");
        }
        Ok(sizes)
    }
}

impl Default for Sizes {
    fn default() -> Self {
        Sizes { min: MIN_ENTRIES, max: MAX_ENTRIES }
    }
}

/// The placement, size and generator seed of session `i` of a store with `seed`.
fn plan(i: usize, sessions: usize, seed: u64, sizes: Sizes) -> (Placement, usize, u64) {
    let mut rng = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(i as u64));
    let u = rng.below(1 << 20) as f64 / f64::from(1u32 << 20);
    let ratio = sizes.max as f64 / sizes.min.max(1) as f64;
    let entries = ((sizes.min as f64 * ratio.powf(u)).round() as usize).clamp(sizes.min, sizes.max);
    let projects = (sessions / 25).clamp(4, 400);
    let cwd = format!("/home/user/proj-{:03}", rng.below(projects));
    let start_ms = YEAR_START_MS + YEAR_MS / sessions.max(1) as i64 * i as i64 + rng.below(3_600_000) as i64;
    // Log-uniform ranks: a few words are in many sessions, most in few.
    let topics = (0..6)
        .map(|_| {
            let u = rng.below(1 << 20) as f64 / f64::from(1u32 << 20);
            topic_word(4000f64.powf(u) as usize - 1)
        })
        .collect();
    (Placement { cwd, start_ms, topics }, entries, rng.next_u64())
}

/// Writes a store of `sessions` sessions under `root` (which must not exist
/// yet; it is built beside it and renamed into place).
pub fn write_store(root: &Path, sessions: usize, seed: u64, sizes: Sizes) -> Result<StoreStats> {
    let tmp = root.with_extension(format!("tmp-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let mut stats = StoreStats::default();
    for i in 0..sessions {
        let bytes = session_bytes(i, sessions, seed, sizes, 0)?;
        let entries = plan(i, sessions, seed, sizes).1;
        let path = tmp.join(relative_path(&bytes)?);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        fs::write(&path, &bytes).with_context(|| format!("writing {}", path.display()))?;
        stats.sessions += 1;
        stats.entries += entries;
        stats.bytes += bytes.len() as u64;
        if (i + 1) % 100 == 0 {
            eprintln!("  {} of {sessions} sessions, {:.0} MB", i + 1, stats.bytes as f64 / 1e6);
        }
    }
    fs::rename(&tmp, root).with_context(|| format!("renaming {} to {}", tmp.display(), root.display()))?;
    Ok(stats)
}

/// The bytes of session `i` of a store, with `extra` more entries than the
/// store has (the first entries are the same: the generator only cuts the end).
pub fn session_bytes(i: usize, sessions: usize, seed: u64, sizes: Sizes, extra: usize) -> Result<Vec<u8>> {
    let (place, entries, session_seed) = plan(i, sessions, seed, sizes);
    let mut bytes = Vec::with_capacity((entries + extra) * 3200);
    let opts = GenOptions { entries: entries + extra, seed: session_seed, shape: Shape::Realistic };
    generate_placed(&mut bytes, opts, &place)?;
    Ok(bytes)
}

/// A literal only the store's oldest session (session 0) holds, the last
/// file a newest-first search reads: a topic word no other session draws,
/// else (in a large store every topic is shared) the session's id.
pub fn oldest_only_literal(sessions: usize, seed: u64, sizes: Sizes) -> Result<String> {
    let others: std::collections::HashSet<String> =
        (1..sessions).flat_map(|i| plan(i, sessions, seed, sizes).0.topics).collect();
    if let Some(word) = plan(0, sessions, seed, sizes).0.topics.into_iter().find(|t| !others.contains(t)) {
        return Ok(word);
    }
    let bytes = session_bytes(0, sessions, seed, sizes, 0)?;
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let header: serde_json::Value = serde_json::from_slice(first).context("generated header")?;
    header.get("id").and_then(|v| v.as_str()).map(str::to_owned).context("generated header without an id")
}

/// Where session `i` of a store lives under its root.
pub fn session_path(root: &Path, i: usize, sessions: usize, seed: u64, sizes: Sizes) -> Result<PathBuf> {
    Ok(root.join(relative_path(&session_bytes(i, sessions, seed, sizes, 0)?)?))
}

/// `--encoded-cwd--/<timestamp>_<id>.jsonl` for a session's bytes (pi's layout).
fn relative_path(session: &[u8]) -> Result<PathBuf> {
    let first = session.split(|&b| b == b'\n').next().unwrap_or_default();
    let header: serde_json::Value = serde_json::from_slice(first).context("generated header")?;
    let field = |k: &str| header.get(k).and_then(|v| v.as_str()).unwrap_or_default().to_owned();
    let cwd = field("cwd");
    let body: String =
        cwd.trim_start_matches('/').chars().map(|c| if matches!(c, '/' | '\\' | ':') { '-' } else { c }).collect();
    let stamp: String = field("timestamp").chars().map(|c| if matches!(c, ':' | '.') { '-' } else { c }).collect();
    Ok(PathBuf::from(format!("--{body}--")).join(format!("{stamp}_{}.jsonl", field("id"))))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn sizes_are_read_as_min_dash_max_and_checked() {
        let s = Sizes::parse("10-60", "--entries").unwrap();
        assert_eq!((s.min, s.max), (10, 60));
        for bad in ["10", "0-5", "9-3", "a-4"] {
            let e = Sizes::parse(bad, "--entries").unwrap_err().to_string();
            assert!(e.starts_with("--entries"), "{bad}: {e}");
        }
    }

    #[test]
    fn topic_words_are_distinct() {
        let words: std::collections::HashSet<String> = (0..8000).map(topic_word).collect();
        assert_eq!(words.len(), 8000);
    }

    #[test]
    fn a_small_store_is_laid_out_as_pi_lays_it_out_and_is_repeatable() {
        let dir = std::env::temp_dir().join(format!("arbor-store-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let (a, b) = (dir.join("a"), dir.join("b"));
        let stats = write_store(&a, 12, 5, Sizes::default()).unwrap();
        write_store(&b, 12, 5, Sizes::default()).unwrap();
        let mut files: Vec<PathBuf> = fs::read_dir(&a)
            .unwrap()
            .flat_map(|d| fs::read_dir(d.unwrap().path()).unwrap().map(|f| f.unwrap().path()))
            .collect();
        files.sort();
        assert_eq!(files.len(), 12);
        assert_eq!(stats.sessions, 12);
        assert!((12 * MIN_ENTRIES..=12 * MAX_ENTRIES).contains(&stats.entries));
        for f in &files {
            let rel = f.strip_prefix(&a).unwrap();
            assert!(rel.to_string_lossy().starts_with("--home-user-proj-"), "{}", rel.display());
            assert_eq!(fs::read(f).unwrap(), fs::read(b.join(rel)).unwrap());
        }
        // A grown session starts with the stored one.
        let stored = fs::read(session_path(&a, 3, 12, 5, Sizes::default()).unwrap()).unwrap();
        let grown = session_bytes(3, 12, 5, Sizes::default(), 100).unwrap();
        assert!(grown.len() > stored.len() && grown.starts_with(&stored));
        assert_eq!(grown[stored.len()..].iter().filter(|&&b| b == b'\n').count(), 100);
        fs::remove_dir_all(&dir).unwrap();
    }
}
