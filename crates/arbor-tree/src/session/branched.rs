//! New sessions made from an existing one (docs/architecture.md, "Creating a
//! branched session"): [`Session::create_branched_session`] (one path of the
//! tree, pi's `createBranchedSession`) and [`Session::fork_from`] (a whole
//! file, migrated first, pi's `forkFrom`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use arbor_log::{Entry, EntryType, SessionHeader};

use super::cursor::LineCursor;
use super::open::absolute;
use super::slot::{value_json, with_parent};
use super::{OpenMode, Session, SessionOptions};
use crate::error::TreeError;
use crate::labels::Label;
use crate::paths::session_file_name;

/// An entry a fork keeps: the entry, its JSON text, its line, and whether only JavaScript reads it.
type Kept = (Entry, Box<str>, usize, bool);

impl Session {
    /// Turns the path to `leaf_id` into a new session (labels rebuilt from the
    /// resolved labels); in persistent mode a new file beside this one, written
    /// at once when the path holds an assistant message. Returns the new path.
    /// The new session's context at its leaf is the original's at `leaf_id`
    /// (see `kept_for_fork`).
    pub fn create_branched_session(&mut self, leaf_id: &str) -> Result<Option<PathBuf>, TreeError> {
        // The fork copies the path's lines: never on the word of a stale index.
        let lines = self.path_as(Some(leaf_id), super::Position::new);
        self.verify_lines(&lines)?;
        let path = self.path_slots(Some(leaf_id));
        if path.is_empty() {
            return Err(TreeError::NotFound(leaf_id.to_owned()));
        }
        if let Some(f) = &self.failed {
            return Err(TreeError::Poisoned(f.clone()));
        }
        let kept = self.kept_for_fork(&path)?;
        // The new session's id and time come before the labels' (ids and clock are injected).
        let new_id = self.next_session_id();
        let timestamp = self.now_iso();
        let labels = self.relabel(&kept)?;
        let parent_session =
            if self.persist { self.file.as_ref().map(|f| f.to_string_lossy().into_owned()) } else { None };
        self.header = SessionHeader::new(new_id.clone(), timestamp.clone(), self.cwd.clone(), parent_session);
        self.header_text = None;
        self.clear();
        for (entry, json, line, js_only) in kept {
            self.push_slot(entry, json, line, js_only);
        }
        for (entry, json) in labels {
            self.push_slot(entry, json, 0, false);
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

    /// The entries a fork of `path` keeps, decoded (the new session has no
    /// source file to decode from): every entry but the label entries (any
    /// `type: "label"`, whatever its body), each re-linked across the label
    /// entries left out to the kept entry before it, so the fork's context at
    /// its leaf is the original's. pi (up to 0.73.1) keeps them pointing at
    /// the missing labels, which cuts the context off after the last label.
    fn kept_for_fork(&self, path: &[usize]) -> Result<Vec<Kept>, TreeError> {
        let src = self.src();
        let mut kept: Vec<Kept> = Vec::with_capacity(path.len());
        for &i in path {
            let s = &self.state.slots[i];
            if s.entry_type() == &EntryType::Label {
                continue;
            }
            let read = |s: &super::Slot| Ok((s.entry(src)?.clone(), Box::<str>::from(s.json(src)?)));
            let (mut entry, mut json) = read(s).map_err(|e| self.stale(e))?;
            // The parent is the path's entry before this one (or, in a cycle, one after it).
            let parent_left_out =
                self.parent_of(i).is_some_and(|p| self.state.slots[p].entry_type() == &EntryType::Label);
            if parent_left_out {
                let parent = kept.last().map(|(e, ..)| e.id.clone());
                json = with_parent(&json, parent.as_deref()).into_boxed_str();
                entry.parent_id = parent;
            }
            kept.push((entry, json, s.line(), s.js_only() && !parent_left_out));
        }
        Ok(kept)
    }

    /// `label` entries re-creating the resolved labels of the `kept` entries,
    /// chained after the last of them, with ids none of them has; each keeps
    /// its label as written and the time it was set (pi 0.73.1).
    fn relabel(&self, kept: &[Kept]) -> Result<Vec<(Entry, Box<str>)>, TreeError> {
        let mut taken: HashSet<String> = kept.iter().map(|s| s.0.id.clone()).collect();
        let targets: Vec<(&str, &Label)> =
            self.resolved_labels()?.iter().filter(|(target, _)| taken.contains(*target)).collect();
        let mut parent = kept.last().map(|s| s.0.id.clone());
        let mut out = vec![];
        for (target, label) in targets {
            let id = self.next_entry_id(&|s| taken.contains(s));
            taken.insert(id.clone());
            // pi's key order.
            let mut v = Map::new();
            v.insert("type".into(), EntryType::Label.as_str().into());
            v.insert("id".into(), id.clone().into());
            v.insert("parentId".into(), parent.replace(id).map_or(Value::Null, Value::String));
            if let Some(ts) = &label.timestamp {
                v.insert("timestamp".into(), ts.clone());
            }
            v.insert("targetId".into(), target.into());
            v.insert("label".into(), label.value.clone());
            let v = Value::Object(v);
            if let Ok(entry) = Entry::from_value(&v) {
                out.push((entry, value_json(&v).into_boxed_str()));
            }
        }
        Ok(out)
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
        let dir = opts.dir_for(target_cwd)?;
        opts.store.create_dir_all(&dir)?;
        let mut fork = Session::blank(opts, target_cwd.to_owned(), true, dir);
        fork.new_session(None, Some(source.to_string_lossy().into_owned()));
        let path = fork.file.clone().ok_or_else(|| TreeError::NotFound("session file".into()))?;
        let mut bytes = value_json(&fork.header.to_value());
        bytes.push('\n');
        let mut cursor = LineCursor::new(src.src());
        for slot in src.state.slots.iter() {
            slot.with_json_via(&mut cursor, |j| bytes.push_str(j)).map_err(|e| src.stale(e))?;
            bytes.push('\n');
        }
        drop(cursor);
        drop(src);
        fork.opts.store.rewrite(&path, bytes.as_bytes())?;
        let opts = fork.opts.clone();
        drop(fork);
        Session::open(&path, OpenMode::Write, opts)
    }
}
