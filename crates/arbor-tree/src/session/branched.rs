//! New sessions made from an existing one (docs/architecture.md, "Creating a
//! branched session"): [`Session::create_branched_session`] (one path of the
//! tree, pi's `createBranchedSession`) and [`Session::fork_from`] (a whole
//! file, migrated first, pi's `forkFrom`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use arbor_log::{Entry, EntryKind, LabelEntry, SessionHeader};

use super::open::absolute;
use super::slot::{entry_json, value_json, LineCursor};
use super::{OpenMode, Session, SessionOptions};
use crate::error::TreeError;
use crate::paths::{session_dir_for, session_file_name};

impl Session {
    /// Turns the path to `leaf_id` into a new session (labels rebuilt from the
    /// resolved labels); in persistent mode a new file beside this one, written
    /// at once when the path holds an assistant message. Returns the new path.
    pub fn create_branched_session(&mut self, leaf_id: &str) -> Result<Option<PathBuf>, TreeError> {
        let path = self.path_slots(Some(leaf_id));
        if path.is_empty() {
            return Err(TreeError::NotFound(leaf_id.to_owned()));
        }
        if let Some(f) = &self.failed {
            return Err(TreeError::Poisoned(f.clone()));
        }
        // Decoded now: the new session has no source file to decode from.
        let kept: Vec<(Entry, Box<str>, usize)> = path
            .iter()
            .map(|&i| &self.state.slots[i])
            .filter(|s| !matches!(s.entry(self.src()).kind, EntryKind::Label(_)))
            .map(|s| (s.entry(self.src()).clone(), s.json(self.src()).into(), s.line))
            .collect();
        // The new session's id and time come before the labels' (ids and clock are injected).
        let new_id = self.next_session_id();
        let timestamp = self.now_iso();
        let labels = self.relabel(&kept);
        let parent_session =
            if self.persist { self.file.as_ref().map(|f| f.to_string_lossy().into_owned()) } else { None };
        self.header = SessionHeader::new(new_id.clone(), timestamp.clone(), self.cwd.clone(), parent_session);
        self.clear();
        for (entry, json, line) in kept {
            self.push_slot(entry, json, line);
        }
        for entry in labels {
            let json = entry_json(&entry);
            self.push_slot(entry, json, 0);
        }
        self.state.leaf_moved = false;
        if !self.persist {
            return Ok(None);
        }
        let new_path = self.session_dir.join(session_file_name(&timestamp, &new_id));
        self.lock = None;
        self.file = Some(new_path.clone());
        // Read-only applied to the old file; the new one is ours to write.
        self.read_only = false;
        self.take_lock()?;
        if self.state.has_assistant {
            self.persist()?;
        }
        Ok(Some(new_path))
    }

    /// `label` entries re-creating the resolved labels of the `kept` entries,
    /// chained after the last of them, with ids none of them has.
    fn relabel(&self, kept: &[(Entry, Box<str>, usize)]) -> Vec<Entry> {
        let mut taken: HashSet<String> = kept.iter().map(|s| s.0.id.clone()).collect();
        let targets: Vec<(&String, &String)> =
            self.state.labels.iter().filter(|(target, _)| taken.contains(*target)).collect();
        let mut parent = kept.last().map(|s| s.0.id.clone());
        let mut out = vec![];
        for (target, label) in targets {
            let id = self.next_entry_id(&|s| taken.contains(s));
            taken.insert(id.clone());
            out.push(Entry {
                id: id.clone(),
                parent_id: parent.replace(id),
                timestamp: self.now_iso(),
                kind: EntryKind::Label(LabelEntry {
                    target_id: target.clone(),
                    label: Some(label.clone()),
                    extra: Default::default(),
                }),
            });
        }
        out
    }

    /// Copies every entry of `source` (migrated first, unlike pi) into a new
    /// session file for `target_cwd` whose header names the source as its
    /// parent, and opens it for writing (pi's `forkFrom`).
    pub fn fork_from(source: &Path, target_cwd: &str, opts: SessionOptions) -> Result<Session, TreeError> {
        let source = absolute(source);
        let src = Session::open(&source, OpenMode::ReadOnly, opts.clone()).map_err(|e| match e {
            TreeError::Missing(_) => TreeError::ForkSourceInvalid(source.clone()),
            TreeError::NoHeader { line: None, .. } => TreeError::ForkSourceInvalid(source.clone()),
            TreeError::NoHeader { .. } => TreeError::ForkSourceNoHeader(source.clone()),
            other => other,
        })?;
        let dir = opts.session_dir.clone().unwrap_or_else(|| session_dir_for(&opts.root(), target_cwd));
        opts.store.create_dir_all(&dir)?;
        let mut fork = Session::blank(opts, target_cwd.to_owned(), true, dir);
        fork.new_session(None, Some(source.to_string_lossy().into_owned()));
        let path = fork.file.clone().ok_or_else(|| TreeError::NotFound("session file".into()))?;
        let mut bytes = value_json(&fork.header.to_value());
        bytes.push('\n');
        let mut cursor = LineCursor::new(src.src());
        for slot in &src.state.slots {
            slot.with_json_via(&mut cursor, |j| bytes.push_str(j));
            bytes.push('\n');
        }
        drop(src);
        fork.opts.store.rewrite(&path, bytes.as_bytes())?;
        let opts = fork.opts.clone();
        drop(fork);
        Session::open(&path, OpenMode::Write, opts)
    }
}
