//! What is on disk ([`Disk`]) and getting appended entries there: deferred
//! materialization, appends, the rewrite after a migration, locking
//! (docs/architecture.md, "The persist state machine" and "Tail repair").

use std::path::Path;

use arbor_log::{SessionLog, TailRepair};

use super::cursor::LineCursor;
use super::Session;
use crate::error::TreeError;

/// What the session's file holds.
#[derive(Debug)]
pub(crate) enum Disk {
    /// No file yet (deferred until the first assistant message).
    NotMaterialized,
    /// The file holds the header and the first `count` slots.
    Synced { count: usize },
    /// The file holds the first `count` slots, but needs a rewrite (migration) before the next write.
    NeedsRewrite { log: Box<SessionLog>, count: usize },
}

fn describe_repair(path: &Path, r: &TailRepair) -> String {
    match r {
        TailRepair::AddedNewline => format!("{}: added the missing newline at the end", path.display()),
        TailRepair::MovedTornTail { side_file, bytes } => format!(
            "{}: moved a torn last line ({bytes} bytes) to {} before appending",
            path.display(),
            side_file.display()
        ),
    }
}

impl Session {
    /// Takes the write lock on the session file (not for read-only or in-memory sessions).
    pub(super) fn take_lock(&mut self) -> Result<(), TreeError> {
        if self.read_only || !self.persist {
            return Ok(());
        }
        if let Some(f) = &self.file {
            self.lock = Some(self.opts.store.lock(f)?);
        }
        Ok(())
    }

    /// Stops writing: releases the write lock and the append handle. The
    /// session keeps everything it holds and answers reads as before; any
    /// later write is refused as on a session opened read-only. (The tree
    /// selector keeps the session a navigation wrote, instead of reading the
    /// file again, and leaves the file to other writers.)
    pub fn stop_writing(&mut self) {
        self.writer = None;
        self.lock = None;
        self.read_only = true;
    }

    /// Refuses writes on a read-only session and after a failed write.
    pub(super) fn check_writable(&self) -> Result<(), TreeError> {
        if self.read_only {
            return Err(TreeError::ReadOnly(self.file.clone().unwrap_or_default()));
        }
        if let Some(f) = &self.failed {
            return Err(TreeError::Poisoned(f.clone()));
        }
        Ok(())
    }

    pub(super) fn header_line(&self) -> Result<String, TreeError> {
        Ok(arbor_log::json::to_string(&self.header.to_value()).map_err(arbor_log::LogError::from)?)
    }

    /// Brings the file up to date with the slots (see [`Disk`]).
    pub(super) fn persist(&mut self) -> Result<(), TreeError> {
        if !self.persist || self.file.is_none() {
            return Ok(());
        }
        match std::mem::replace(&mut self.disk, Disk::NotMaterialized) {
            Disk::NotMaterialized if !self.state.has_assistant => Ok(()),
            Disk::NotMaterialized => self.write_whole(),
            Disk::Synced { count } => {
                self.disk = Disk::Synced { count };
                self.append_from(count)
            }
            Disk::NeedsRewrite { log, count } => self.rewrite_migrated(log, count),
        }
    }

    /// The first write of a new session: header and every slot, atomically.
    fn write_whole(&mut self) -> Result<(), TreeError> {
        let Some(path) = self.file.clone() else { return Ok(()) };
        let mut bytes = self.header_line()?;
        bytes.push('\n');
        let mut cursor = LineCursor::new(self.src());
        for s in self.state.slots.iter() {
            s.with_json_via(&mut cursor, |j| bytes.push_str(j)).map_err(|e| self.stale(e))?;
            bytes.push('\n');
        }
        drop(cursor);
        if let Some(dir) = path.parent() {
            self.opts.store.create_dir_all(dir)?;
        }
        self.opts.store.rewrite(&path, bytes.as_bytes())?;
        self.disk = Disk::Synced { count: self.state.slots.len() };
        Ok(())
    }

    /// Appends the slots from `count` on (the file holds the ones before).
    fn append_from(&mut self, count: usize) -> Result<(), TreeError> {
        let Some(path) = self.file.clone() else { return Ok(()) };
        let mut bytes = String::new();
        for s in self.state.slots.iter_from(count) {
            s.with_json(self.src(), |j| bytes.push_str(j)).map_err(|e| self.stale(e))?;
            bytes.push('\n');
        }
        // The file as this session read it, before a torn tail is cut and the lines go on.
        let watch = self.state.watch.clone().filter(|w| w.check().is_ok());
        let mut repaired = false;
        if self.writer.is_none() {
            let (w, repair) = self.opts.store.open_append(&path, self.opts.durability)?;
            if let Some(r) = repair {
                self.notices.push(describe_repair(&path, &r));
                repaired = true;
            }
            self.writer = Some(w);
        }
        if let Some(w) = self.writer.as_mut() {
            w.append(bytes.as_bytes())?;
        }
        if let Some(watch) = watch {
            watch.appended(repaired);
        }
        self.disk = Disk::Synced { count: self.state.slots.len() };
        Ok(())
    }

    /// The first write after a migration: the migrated log and the new slots, atomically.
    fn rewrite_migrated(&mut self, log: Box<SessionLog>, count: usize) -> Result<(), TreeError> {
        let Some(path) = self.file.clone() else { return Ok(()) };
        let mut bytes = log.to_bytes(true);
        for s in self.state.slots.iter_from(count) {
            s.with_json(self.src(), |j| bytes.extend_from_slice(j.as_bytes())).map_err(|e| self.stale(e))?;
            bytes.push(b'\n');
        }
        if let Err(e) = self.opts.store.rewrite(&path, &bytes) {
            self.disk = Disk::NeedsRewrite { log, count };
            return Err(e);
        }
        self.note_link_rewrite(&path);
        self.writer = None;
        self.disk = Disk::Synced { count: self.state.slots.len() };
        Ok(())
    }

    /// Says so when a rewrite of `path` went to the file a link names.
    pub(super) fn note_link_rewrite(&mut self, path: &Path) {
        if let Some(target) = self.opts.store.link_target(path) {
            self.notices.push(format!(
                "{} is a symbolic link: the rewritten session went to its target {} (the link is kept)",
                path.display(),
                target.display()
            ));
        }
    }

    /// Writes the session file now, even before the first assistant message
    /// (pi defers it; a CLI fork wants the file to exist). No-op when on disk already.
    pub fn materialize(&mut self) -> Result<(), TreeError> {
        self.check_writable()?;
        if !self.persist || !matches!(self.disk, Disk::NotMaterialized) {
            return Ok(());
        }
        let had = self.state.has_assistant;
        self.state.has_assistant = true;
        let r = self.persist();
        self.state.has_assistant = had;
        r
    }
}
