//! `arbor import claude|codex`: other agents' transcripts as pi sessions.
//!
//! A transcript is read up to its last complete line ([`lines`]), mapped to
//! one or more sessions in memory ([`claude`], [`codex`], through [`build`]),
//! and each session is written to the sessions directory of its cwd
//! ([`write`]). Everything is derived from the transcript: importing the same
//! file again gives the same bytes, so a grown transcript extends its session.

mod build;
mod claude;
mod codex;
mod lines;
mod opencode;
mod write;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use arbor_log::SessionHeader;
use arbor_tree::paths;
use serde::Serialize;

pub use build::SOURCE_KEY;
pub use lines::SkippedLine;
pub use write::Outcome;

use crate::InteropError;
use build::Builder;

/// A transcript format Arbor imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Claude Code: `~/.claude/projects/<cwd>/<session>.jsonl`.
    Claude,
    /// Codex CLI: `~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl`.
    Codex,
    /// OpenCode: `~/.local/share/opencode/storage` (a JSON file per session,
    /// message and part); a transcript is a session's file
    /// (`storage/session/<project>/<id>.json`).
    #[serde(rename = "opencode")]
    OpenCode,
}

impl Format {
    /// `claude`, `codex` or `opencode`: the prefix of the custom types it keeps records under.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Claude => "claude",
            Format::Codex => "codex",
            Format::OpenCode => "opencode",
        }
    }
}

/// Where imported sessions go.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The sessions root: each session lands in its cwd's directory below it
    /// (`arbor_tree::paths::session_dir_for`).
    pub sessions_root: PathBuf,
}

/// What importing one transcript did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportReport {
    /// The transcript.
    pub source: PathBuf,
    /// Its format.
    pub format: Format,
    /// The sessions made from it: the main one first, then one per sidechain.
    pub sessions: Vec<SessionReport>,
    /// The lines left out (not JSON objects), with why.
    pub skipped: Vec<SkippedLine>,
    /// True when the last line is unfinished (still being written): a later import takes it.
    pub partial_tail: bool,
}

/// One session written (or found up to date) by an import.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionReport {
    /// The session file.
    pub path: PathBuf,
    /// The pi session id (derived from the source's).
    pub id: String,
    /// The session id in the source (Claude's `sessionId`, Codex's `session_meta.id`).
    pub source_session: String,
    /// For a sidechain: the main session's file, when it has been imported.
    pub parent_session: Option<PathBuf>,
    /// Created, unchanged, extended or replaced.
    pub outcome: Outcome,
    /// Entries in the session.
    pub entries: usize,
    /// Entries appended to an earlier import (extended), or all of them (created, replaced).
    pub written: usize,
    /// The copy of the file kept before a replacement.
    pub backup: Option<PathBuf>,
    /// For each source record type, what its records became and how many:
    /// `message user`, `message toolResult`, `compaction`, `label`,
    /// `merged into the reply before`, `custom claude.<type>`, ….
    pub records: BTreeMap<String, BTreeMap<String, usize>>,
    /// How many entries keep a record whole as `custom`.
    pub custom: usize,
}

/// One session planned from a transcript, not yet written.
#[derive(Debug)]
pub(crate) struct Planned {
    id: String,
    timestamp: String,
    cwd: String,
    source_session: String,
    /// For a sidechain: the main session's id.
    parent_id: Option<String>,
    builder: Builder,
}

impl Planned {
    fn new(
        id: String,
        timestamp: String,
        cwd: String,
        source_session: String,
        parent_id: Option<String>,
        builder: Builder,
    ) -> Self {
        Planned { id, timestamp, cwd, source_session, parent_id, builder }
    }
}

/// The transcripts an import of `path` reads: the file itself and, for a
/// Claude Code session, its subagents' transcripts (`<dir>/<stem>/subagents/*.jsonl`);
/// for OpenCode, a session's file, or every session of a storage folder
/// (parents before their children).
pub fn sources(format: Format, path: &Path) -> Vec<PathBuf> {
    if format == Format::OpenCode {
        return opencode::session_files(path);
    }
    let mut out = vec![path.to_owned()];
    if format == Format::Claude {
        if let (Some(dir), Some(stem)) = (path.parent(), path.file_stem()) {
            if let Ok(read) = std::fs::read_dir(dir.join(stem).join("subagents")) {
                let mut agents: Vec<PathBuf> = read
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                    .collect();
                agents.sort();
                out.extend(agents);
            }
        }
    }
    out
}

/// Imports transcripts, each with [`sources`], and returns one result per
/// transcript read. A sidechain's `parentSession` is its main session's file
/// when that is imported in the same call or was imported before.
pub fn import_transcripts(
    format: Format,
    paths: &[PathBuf],
    opts: &ImportOptions,
) -> Vec<(PathBuf, Result<ImportReport, InteropError>)> {
    let mut written: HashMap<String, PathBuf> = HashMap::new();
    let mut out = Vec::new();
    for path in paths {
        for source in sources(format, path) {
            let result = import_one(format, &source, opts, &mut written);
            out.push((source, result));
        }
    }
    out
}

/// One session a transcript makes, read in place ([`read_transcript`]): the
/// lines an import would write, held in memory.
#[derive(Debug, Clone)]
pub struct InPlace {
    /// The session's header. A sidechain's `parentSession` is its main
    /// session's id (an import writes the main session's file there).
    pub header: SessionHeader,
    /// The session file's lines as an import would write them, header first.
    pub lines: Vec<String>,
    /// The session id in the source.
    pub source_session: String,
}

/// A transcript read in place: its sessions, and the lines left out.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// The sessions it makes: the main one first, then one per sidechain.
    pub sessions: Vec<InPlace>,
    /// The lines left out (not JSON objects), with why.
    pub skipped: Vec<SkippedLine>,
    /// True when the last line is unfinished (still being written).
    pub partial_tail: bool,
}

/// Reads one transcript and maps it to sessions exactly as an import does,
/// writing nothing: for readers that look at another agent's history in
/// place (`arbor usage`). A transcript with no record is
/// [`InteropError::Empty`].
pub fn read_transcript(format: Format, path: &Path) -> Result<Transcript, InteropError> {
    let (read, planned) = plan_file(format, path)?;
    let sessions = planned
        .into_iter()
        .map(|p| {
            let header = SessionHeader::new(p.id.clone(), p.timestamp.clone(), p.cwd.clone(), p.parent_id.clone());
            let lines = p.builder.lines(&header);
            InPlace { header, lines, source_session: p.source_session }
        })
        .collect();
    Ok(Transcript { sessions, skipped: read.skipped, partial_tail: read.partial_tail })
}

/// A transcript's records and the sessions they make.
fn plan_file(format: Format, path: &Path) -> Result<(lines::Records, Vec<Planned>), InteropError> {
    if format == Format::OpenCode {
        return opencode::plan(path);
    }
    let read = lines::read_records(path)?;
    if read.records.is_empty() {
        return Err(InteropError::Empty { path: path.to_owned(), format: format.as_str() });
    }
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let planned = match format {
        Format::Claude => claude::plan(&read.records, &stem),
        Format::Codex => codex::plan(&read.records, &stem),
        Format::OpenCode => Vec::new(),
    };
    Ok((read, planned))
}

fn import_one(
    format: Format,
    path: &Path,
    opts: &ImportOptions,
    written: &mut HashMap<String, PathBuf>,
) -> Result<ImportReport, InteropError> {
    let (read, planned) = plan_file(format, path)?;
    let mut sessions = Vec::new();
    for p in planned {
        let dir = paths::session_dir_for(&opts.sessions_root, &p.cwd);
        let file = dir.join(paths::session_file_name(&p.timestamp, &p.id));
        let parent = p.parent_id.as_deref().and_then(|id| written.get(id).cloned().or_else(|| find_session(&dir, id)));
        let header = SessionHeader::new(
            p.id.clone(),
            p.timestamp.clone(),
            p.cwd.clone(),
            parent.as_ref().map(|x| x.to_string_lossy().into_owned()),
        );
        let lines = p.builder.lines(&header);
        let done = write::write_session(&file, &lines)?;
        written.insert(p.id.clone(), file.clone());
        let custom = p.builder.entries.iter().filter(|e| matches!(e.kind, arbor_log::EntryKind::Custom(_))).count();
        sessions.push(SessionReport {
            path: file,
            id: p.id,
            source_session: p.source_session,
            parent_session: parent,
            outcome: done.outcome,
            entries: p.builder.entries.len(),
            written: done.written,
            backup: done.backup,
            records: p.builder.tally,
            custom,
        });
    }
    Ok(ImportReport {
        source: path.to_owned(),
        format,
        sessions,
        skipped: read.skipped,
        partial_tail: read.partial_tail,
    })
}

/// The session file in `dir` whose id is `id` (named `<time>_<id>.jsonl`).
fn find_session(dir: &Path, id: &str) -> Option<PathBuf> {
    let suffix = format!("_{id}.jsonl");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with(&suffix)))
        .collect();
    found.sort();
    found.into_iter().next()
}
