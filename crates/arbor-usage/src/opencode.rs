//! OpenCode's sessions where they are: the session info files of a
//! storage folder, and the stamp of one session (its info file, its
//! messages and their parts), so the cache knows when one changed.

use std::path::{Path, PathBuf};

use arbor_tree::FileStamp;

use crate::error::UsageError;
use crate::files::{files_under, local_stamp};

/// OpenCode's folder of messages under its storage folder (`message/<session>/`).
const MESSAGE_DIR: &str = "message";

/// The session info files of OpenCode's storage folder
/// (`STORAGE/session/<project>/<session>.json`).
pub fn opencode_sessions(storage: &Path) -> Result<Vec<PathBuf>, UsageError> {
    files_under(&storage.join("session"), ".json")
}

/// The stamp of the session whose info file is `info`: the info file's,
/// with the size and the latest times of its message and part files folded in.
pub(crate) fn stamp(info: &Path) -> Option<FileStamp> {
    let mut stamp = local_stamp(info)?;
    let storage = info.parent()?.parent()?.parent()?;
    let id = info.file_stem()?.to_str()?;
    arbor_tree::sessions::check_component(id).ok()?;
    let messages = files_under(&storage.join(MESSAGE_DIR).join(id), ".json").ok()?;
    for m in &messages {
        fold(&mut stamp, m);
        if let Some(mid) =
            m.file_stem().and_then(|s| s.to_str()).filter(|m| arbor_tree::sessions::check_component(m).is_ok())
        {
            for p in files_under(&storage.join("part").join(mid), ".json").ok()? {
                fold(&mut stamp, &p);
            }
        }
    }
    Some(stamp)
}

fn fold(stamp: &mut FileStamp, file: &Path) {
    if let Some(s) = local_stamp(file) {
        stamp.size = stamp.size.wrapping_add(s.size).wrapping_add(1);
        stamp.mtime_ns = stamp.mtime_ns.max(s.mtime_ns);
        stamp.changed_ns = stamp.changed_ns.max(s.changed_ns);
        stamp.identity.push_str(&format!("|{}", s.identity.len()));
    }
}
