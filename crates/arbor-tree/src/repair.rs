//! `repair`: a clean copy of a damaged session file, losing nothing.
//!
//! The repaired file holds what every reader would read: the header and the
//! entries, migrated to v3, the later line of a repeated id. Everything else
//! (malformed lines, non-objects, a torn tail, extra headers, lines that are
//! not entries, earlier lines of a repeated id) goes to `FILE.rejected-<ms>`,
//! and the original is kept as `FILE.backup-<ms>`. The rewrite is atomic and
//! happens under the file's write lock. Without `write` nothing is touched.
//! Through a symbolic link, the file it names is repaired (the link stays,
//! and the report says so); a file its owner may not write is refused
//! before anything is written.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use arbor_log::files::{ensure_writable, is_link, resolve};
use arbor_log::ids::SeededIds;
use arbor_log::scan::ReadAt;
use arbor_log::writer::{atomic_write, backup_copy, ensure_one_name, write_side, write_side_by};
use arbor_log::{LastLine, LineKind, LogLine, SessionLog};

use crate::check::pass::{read_pass, Rejection};
use crate::error::TreeError;
use crate::store::{FileStore, Store};

/// What `repair` did (or, in a dry run, would do).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RepairReport {
    /// One line per action, in file order.
    pub actions: Vec<String>,
    /// Lines kept in the repaired file.
    pub kept: usize,
    /// Lines moved to the side file.
    pub rejected: usize,
    /// True when the file needs no repair.
    pub clean: bool,
    /// The backup of the original (after a write).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<PathBuf>,
    /// The side file with the rejected lines (after a write).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected_file: Option<PathBuf>,
}

/// What [`repair_file`] does besides finding what needs repair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repair {
    /// Only report: nothing is written.
    Report,
    /// Write the repair: the original is backed up, the rejected lines go
    /// to a side file, and the file is replaced atomically under its lock.
    Write,
}

/// Repairs `path` (with [`Repair::Report`], only says what a repair would do).
///
/// A current-version file is read in one streaming pass (a few integers
/// per entry) and, with [`Repair::Write`], copied line by line into the
/// repaired file and the side file: memory follows the entries, not the
/// file. Files that need a migration are read whole ([`SessionLog`]).
///
/// ```
/// use arbor_tree::repair::{repair_file, Repair};
///
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("s.jsonl");
/// # std::fs::write(&path, concat!(
/// #     r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#, "\n",
/// #     "not json\n",
/// # ))?;
/// let report = repair_file(&path, Repair::Report)?;
/// assert!(!report.clean);
/// assert!(std::fs::read_to_string(&path)?.contains("not json"), "a report writes nothing");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn repair_file(path: &Path, repair: Repair) -> Result<RepairReport, TreeError> {
    let write = repair == Repair::Write;
    if !FileStore.exists(path)? {
        return Err(TreeError::Missing(path.to_owned()));
    }
    // The file a link names is the one repaired; its side files go beside it.
    let target = resolve(path)?;
    if !write {
        if let Some((report, _)) = dry_run(path, &target)? {
            return Ok(report);
        }
        return repair_with_log(path, &target, false);
    }
    ensure_writable(&target)?;
    let _lock = FileStore.lock(path)?;
    match dry_run(path, &target)? {
        Some((report, plan)) => apply(&target, report, &plan),
        None => repair_with_log(path, &target, true),
    }
}

/// Which lines a streamed repair keeps, and the file they are copied from.
struct Plan {
    src: std::sync::Arc<dyn ReadAt>,
    /// The file's length when it was read.
    len: u64,
    /// Lines that go to the side file, in order.
    moved: Vec<usize>,
    /// Blank lines, dropped, in order.
    blank: Vec<usize>,
}

/// Writes the repair a dry run planned (see [`repair_file`]): the original
/// backed up, the lines moved aside copied to the side file, the rest to
/// the repaired file, each line as it is (a newline added where the last
/// one lacks it).
fn apply(target: &Path, mut report: RepairReport, plan: &Plan) -> Result<RepairReport, TreeError> {
    if report.clean {
        return Ok(report);
    }
    // A rename gives this name the repaired file and leaves every other name of it on the old one.
    ensure_one_name(target)?;
    let backup = backup_copy(target, "backup")?;
    if !plan.moved.is_empty() {
        let moved = |n: usize| plan.moved.binary_search(&n).is_ok();
        let side = write_side_by(target, "rejected", &mut |w| copy_lines(plan, &moved, w))?;
        report.rejected_file = Some(side);
    }
    let kept = |n: usize| plan.moved.binary_search(&n).is_err() && plan.blank.binary_search(&n).is_err();
    atomic_write(target, |w| copy_lines(plan, &kept, w))?;
    report.backup = Some(backup);
    Ok(report)
}

/// Bytes of the file copied at once.
const COPY_CHUNK: usize = 1 << 20;

/// Copies the lines of the plan's file that `wanted` takes (by number,
/// counting from one) to `w`, a chunk at a time (a line of any length is
/// never held whole), each ending with a newline.
fn copy_lines(plan: &Plan, wanted: &dyn Fn(usize) -> bool, w: &mut dyn Write) -> std::io::Result<()> {
    let mut buf = vec![0u8; COPY_CHUNK];
    let (mut at, mut line) = (0u64, 1usize);
    let mut take = wanted(line);
    // True when the line being copied has bytes not yet ended by a newline.
    let mut open = false;
    while at < plan.len {
        let want = usize::try_from(plan.len - at).map_or(COPY_CHUNK, |n| n.min(COPY_CHUNK));
        let n = plan.src.read_at(&mut buf[..want], at)?;
        if n == 0 {
            break;
        }
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', &buf[..n]) {
            if take {
                w.write_all(&buf[start..=nl])?;
            }
            start = nl + 1;
            line += 1;
            take = wanted(line);
            open = false;
        }
        if take && start < n {
            w.write_all(&buf[start..n])?;
        }
        open |= start < n;
        at += n as u64;
    }
    if open && take {
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// [`repair_file`] reading every line into a [`SessionLog`] (what `--write`
/// and files that need a migration take).
#[cfg(test)]
pub(crate) fn repair_in_full(path: &Path, repair: Repair) -> Result<RepairReport, TreeError> {
    repair_with_log(path, &resolve(path)?, repair == Repair::Write)
}

/// (With `write`, the caller holds the file's write lock.)
fn repair_with_log(path: &Path, target: &Path, write: bool) -> Result<RepairReport, TreeError> {
    let mut log = SessionLog::read_path(path)?;
    let Some(header) = log.header() else {
        return Err(TreeError::NoHeader {
            path: path.to_owned(),
            line: None,
            reason: "no usable session header; nothing can be repaired safely (the file is left as it is)".into(),
        });
    };
    let original = log.to_bytes(LastLine::AsRead);
    let mut actions = vec![];
    let report = log.migrate(&mut SeededIds::from_text(&header.id));
    for step in &report.steps {
        actions.push(format!("0: migrate v{} -> v{}: {}", step.from, step.to, step.changes.join("; ")));
    }
    let Sorted { kept, rejected, n_kept, n_rejected, blank } = sort_lines(&log, &mut actions)?;
    if blank > 0 {
        actions.push(format!("0: drop {blank} blank lines"));
    }
    let clean = kept == original;
    if !clean && is_link(path) {
        let what = format!("0: {} is a symbolic link: its target {} is repaired", path.display(), target.display());
        actions.insert(0, what);
    }
    let mut out =
        RepairReport { actions, kept: n_kept, rejected: n_rejected, clean, backup: None, rejected_file: None };
    if clean || !write {
        return Ok(out);
    }
    // A rename gives this name the repaired file and leaves every other name of it on the old one.
    ensure_one_name(target)?;
    let backup = backup_copy(target, "backup")?;
    if !rejected.is_empty() {
        out.rejected_file = Some(write_side(target, "rejected", &mut &rejected[..])?);
    }
    atomic_write(target, |w| w.write_all(&kept))?;
    out.backup = Some(backup);
    Ok(out)
}

/// The lines of a log sorted into the repaired file and the side file.
struct Sorted {
    kept: Vec<u8>,
    rejected: Vec<u8>,
    n_kept: usize,
    n_rejected: usize,
    blank: usize,
}

/// Sorts every line into `kept` or `rejected` (blank lines are dropped),
/// saying in `actions` why each rejected line goes.
fn sort_lines(log: &SessionLog, actions: &mut Vec<String>) -> Result<Sorted, TreeError> {
    let (entries, _) = log.entries_with_diagnostics();
    let mut last_line: HashMap<&str, usize> = HashMap::new();
    for (line, e) in &entries {
        last_line.insert(e.id.as_str(), *line);
    }
    let entry_at: HashMap<usize, &str> = entries.iter().map(|(l, e)| (*l, e.id.as_str())).collect();
    let diag_at: HashMap<usize, String> = log.diagnostics().iter().map(|d| (d.line, d.kind.to_string())).collect();
    // Why a line that is not blank is left out, or `None` when it is kept.
    let rejection = |l: &LogLine| -> Option<String> {
        match &l.kind {
            LineKind::Blank | LineKind::TitleSlot(_) | LineKind::Header(_) => None,
            LineKind::Skipped => Some(diag_at.get(&l.number).cloned().unwrap_or_else(|| "unreadable".into())),
            LineKind::ExtraHeader(_) => Some("extra session header".into()),
            LineKind::Record(_) => match entry_at.get(&l.number) {
                None => Some("not an entry".into()),
                Some(id) if last_line.get(id) != Some(&l.number) => {
                    Some(format!("id {id} appears again on line {}", last_line[id]))
                }
                Some(_) => None,
            },
        }
    };
    let mut out = Sorted { kept: vec![], rejected: vec![], n_kept: 0, n_rejected: 0, blank: 0 };
    for l in log.lines() {
        if matches!(l.kind, LineKind::Blank) {
            out.blank += 1;
            continue;
        }
        let why = rejection(l);
        if let Some(why) = &why {
            actions.push(format!("{}: move to the side file: {why}", l.number));
        }
        let keep = why.is_none();
        let bytes: Vec<u8> = if l.is_dirty() {
            let v = match &l.kind {
                LineKind::Header(v) | LineKind::ExtraHeader(v) | LineKind::Record(v) => v,
                _ => continue,
            };
            // Written into its line: what the migration did not change keeps its bytes.
            match arbor_log::json::splice(l.raw(), v) {
                Some(text) => text,
                None => arbor_log::json::to_vec(v).map_err(arbor_log::LogError::from)?,
            }
        } else {
            l.raw().to_vec()
        };
        if keep && l.raw().last() != Some(&b'\n') {
            actions.push(format!("{}: add the missing newline at the end", l.number));
        }
        let target = if keep { &mut out.kept } else { &mut out.rejected };
        target.extend_from_slice(if keep { &bytes } else { l.raw() });
        if target.last() != Some(&b'\n') {
            target.push(b'\n');
        }
        if keep {
            out.n_kept += 1;
        } else {
            out.n_rejected += 1;
        }
    }
    Ok(out)
}

/// A dry run over a current-version file in one streaming pass (see
/// [`crate::check`]), holding a few integers per entry instead of every
/// line; `None` when the file needs the full reader (no usable header, a
/// migration).
fn dry_run(path: &Path, target: &Path) -> Result<Option<(RepairReport, Plan)>, TreeError> {
    let Some(src) = FileStore.open_at(path)? else { return Err(TreeError::Missing(path.to_owned())) };
    let len = src.len().map_err(|e| TreeError::io(path, e))?;
    let Some(pass) = read_pass(&*src).map_err(|e| TreeError::io(path, e))? else { return Ok(None) };
    let l = &pass.ledger;
    // Every line set aside, in file order: the pass's, and the earlier lines of repeated ids.
    let mut moved: Vec<(usize, String)> = pass
        .rejected
        .iter()
        .map(|(line, why)| {
            let why = match why {
                Rejection::Unreadable(why) => why.clone(),
                Rejection::ExtraHeader => "extra session header".to_owned(),
                Rejection::NotAnEntry => "not an entry".to_owned(),
            };
            (*line, why)
        })
        .collect();
    for i in (0..l.len() as u32).filter(|&i| !l.live(i)) {
        let id = l.id(i);
        let last = l.lookup(id).map_or(0, |k| l.line(k));
        moved.push((l.line(i), format!("id {id} appears again on line {last}")));
    }
    moved.sort_by_key(|m| m.0);
    let mut actions: Vec<String> =
        moved.iter().map(|(line, why)| format!("{line}: move to the side file: {why}")).collect();
    let unterminated = pass.unterminated.filter(|(_, entry)| entry.is_none_or(|e| l.live(e)));
    if let Some((line, _)) = unterminated {
        actions.push(format!("{line}: add the missing newline at the end"));
    }
    if !pass.blank.is_empty() {
        actions.push(format!("0: drop {} blank lines", pass.blank.len()));
    }
    let prefix_kept =
        pass.prefix.lines().iter().filter(|l| !matches!(l.kind, LineKind::Blank | LineKind::Skipped)).count();
    let live = (0..l.len() as u32).filter(|&i| l.live(i)).count();
    let clean = moved.is_empty() && pass.blank.is_empty() && unterminated.is_none();
    if !clean && is_link(path) {
        let what = format!("0: {} is a symbolic link: its target {} is repaired", path.display(), target.display());
        actions.insert(0, what);
    }
    let report = RepairReport {
        actions,
        kept: prefix_kept + live,
        rejected: moved.len(),
        clean,
        backup: None,
        rejected_file: None,
    };
    let moved = moved.into_iter().map(|(line, _)| line).collect();
    Ok(Some((report, Plan { src, len, moved, blank: pass.blank })))
}
