//! Where files live: pi's sessions directory layout (docs/format.md, "Where
//! files live") and Arbor's cache directory for derived data.
//!
//! The functions that read the environment ([`sessions_root`],
//! [`cache_dir`], [`index_dir`], [`agent_dir`]) are helpers for a program's
//! policy (the `arbor` command calls them); nothing else in the library
//! calls them, so no default reads the environment.

use std::path::{Path, PathBuf};

pub use crate::lock::lock_path;

/// The environment variable that overrides the sessions root for Arbor.
pub const SESSIONS_DIR_ENV: &str = "ARBOR_SESSIONS_DIR";
/// pi's agent directory override.
pub const PI_AGENT_DIR_ENV: &str = "PI_CODING_AGENT_DIR";
/// The environment variable that overrides Arbor's cache directory.
pub const CACHE_DIR_ENV: &str = "ARBOR_CACHE_DIR";
/// The environment variable (any value) that turns the index cache off.
pub const NO_INDEX_ENV: &str = "ARBOR_NO_INDEX";

fn expand_tilde(p: &str) -> PathBuf {
    let home = std::env::home_dir();
    match (p, home) {
        ("~", Some(h)) => h,
        (p, Some(h)) if p.starts_with("~/") => h.join(&p[2..]),
        (p, _) => PathBuf::from(p),
    }
}

/// pi's agent dir: `$PI_CODING_AGENT_DIR` (with `~` expanded), else `~/.pi/agent`.
pub fn agent_dir() -> PathBuf {
    match std::env::var(PI_AGENT_DIR_ENV) {
        Ok(v) if !v.is_empty() => expand_tilde(&v),
        _ => expand_tilde("~/.pi/agent"),
    }
}

/// The sessions root: `$ARBOR_SESSIONS_DIR` if set, else `<agent dir>/sessions`.
pub fn sessions_root() -> PathBuf {
    match std::env::var(SESSIONS_DIR_ENV) {
        Ok(v) if !v.is_empty() => expand_tilde(&v),
        _ => agent_dir().join("sessions"),
    }
}

/// Arbor's cache directory, where derived data lives (indexes, the catalog):
/// `$ARBOR_CACHE_DIR`, else `$XDG_CACHE_HOME/arbor`, else `~/.cache/arbor`
/// (a leading `~` expanded). `None` when none of them can be named (no home
/// directory): callers then keep no derived data. Nothing is created here.
pub fn cache_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    if let Some(dir) = var(CACHE_DIR_ENV) {
        return Some(expand_tilde(&dir));
    }
    if let Some(dir) = var("XDG_CACHE_HOME") {
        return Some(expand_tilde(&dir).join("arbor"));
    }
    std::env::home_dir().map(|home| home.join(".cache").join("arbor"))
}

/// Where session indexes are cached: `<cache dir>/index`; `None` when
/// `$ARBOR_NO_INDEX` is set or there is no cache directory (then no index is
/// kept). Nothing is created here.
pub fn index_dir() -> Option<PathBuf> {
    if std::env::var_os(NO_INDEX_ENV).is_some() {
        return None;
    }
    cache_dir().map(|dir| dir.join("index"))
}

/// pi's per-cwd directory name: `--` + the cwd with one leading `/` or `\`
/// removed and every `/`, `\` and `:` replaced by `-` + `--`.
pub fn encode_cwd(cwd: &str) -> String {
    let trimmed = cwd.strip_prefix('/').or_else(|| cwd.strip_prefix('\\')).unwrap_or(cwd);
    let body: String = trimmed.chars().map(|c| if matches!(c, '/' | '\\' | ':') { '-' } else { c }).collect();
    format!("--{body}--")
}

/// The default session directory for `cwd` under `root`.
pub fn session_dir_for(root: &Path, cwd: &str) -> PathBuf {
    root.join(encode_cwd(cwd))
}

/// A session file name: `<ISO timestamp with ':' and '.' as '-'>_<id>.jsonl`.
pub fn session_file_name(timestamp: &str, id: &str) -> String {
    let ts: String = timestamp.chars().map(|c| if matches!(c, ':' | '.') { '-' } else { c }).collect();
    format!("{ts}_{id}.jsonl")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_encoding_matches_pi() {
        assert_eq!(encode_cwd("/home/me/proj"), "--home-me-proj--");
        assert_eq!(encode_cwd("C:\\Users\\me"), "--C--Users-me--");
        assert_eq!(encode_cwd("/"), "----");
        assert_eq!(encode_cwd("//srv"), "---srv--");
    }

    #[test]
    fn file_name_matches_pi() {
        assert_eq!(
            session_file_name("2026-03-01T10:00:00.000Z", "0b5f2c3e"),
            "2026-03-01T10-00-00-000Z_0b5f2c3e.jsonl"
        );
    }
}
