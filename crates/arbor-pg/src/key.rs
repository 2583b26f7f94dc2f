//! How sessions are named on the server: as on disk, by their directory's
//! name (pi's encoded cwd) and their file name. A path, local or the
//! store's own, names the session of its last two components; the store's
//! paths sit under [`ROOT`].

use std::fmt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The root of the paths a [`crate::PgStore`] hands out: `/DIR/FILE`.
pub const ROOT: &str = "/";

/// A session's name on the server.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey {
    /// The directory's name (`--home-me-project--`; empty for a file at the root).
    pub dir: String,
    /// The file name (`<time>_<id>.jsonl`).
    pub name: String,
}

impl SessionKey {
    /// The session a path names: its parent directory's name and its file name.
    pub fn of_path(path: &Path) -> SessionKey {
        let part = |p: Option<&Path>| {
            p.and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        };
        SessionKey { dir: part(path.parent()), name: part(Some(path)) }
    }

    /// The directory a path names (its last component; empty for the root).
    pub(crate) fn dir_of(dir: &Path) -> String {
        dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    }

    /// The store's path of this session (`/DIR/FILE`).
    pub fn path(&self) -> PathBuf {
        let mut p = PathBuf::from(ROOT);
        if !self.dir.is_empty() {
            p.push(&self.dir);
        }
        p.push(&self.name);
        p
    }

    /// Refuses a name that could not be one folder and one file under a
    /// sessions root: each part must be a single path component (no `/` or
    /// `\`, not `.` or `..`, not empty; the folder is empty only for a
    /// session at the root), hold no NUL or other control character, and fit
    /// in a file name (255 bytes). Names are checked where they enter the
    /// server (every write) and where they leave it (pull), so a row planted
    /// by hand never becomes a path outside the folder pulled into.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.name.is_empty() {
            return Err("an empty file name");
        }
        for part in [self.dir.as_str(), self.name.as_str()].into_iter().filter(|p| !p.is_empty()) {
            component(part)?;
        }
        Ok(())
    }

    /// The name as messages show it: quoted and escaped when it holds
    /// anything a terminal would act on or a reader could misread.
    pub fn shown(&self) -> String {
        let plain = |s: &str| s.chars().all(|c| !c.is_control() && c != '"' && c != '\\');
        if plain(&self.dir) && plain(&self.name) {
            self.to_string()
        } else {
            format!("{:?}", self.to_string())
        }
    }

    /// The advisory lock key of this session: 64 bits of a SHA-256 of its name.
    pub(crate) fn lock_key(&self) -> i64 {
        let mut h = Sha256::new();
        h.update(b"arbor-session\0");
        h.update(self.dir.as_bytes());
        h.update(b"\0");
        h.update(self.name.as_bytes());
        let d = h.finalize();
        let mut k = [0u8; 8];
        k.copy_from_slice(&d[..8]);
        i64::from_be_bytes(k)
    }
}

/// Why `part` is not a single, printable file name.
fn component(part: &str) -> Result<(), &'static str> {
    if part == "." || part == ".." {
        return Err("a `.` or `..` part");
    }
    if part.contains(['/', '\\']) {
        return Err("a path separator");
    }
    if part.contains('\0') {
        return Err("a NUL character");
    }
    if part.chars().any(char::is_control) {
        return Err("a control character");
    }
    if part.len() > 255 {
        return Err("a part longer than 255 bytes");
    }
    Ok(())
}

impl fmt::Display for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.dir.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.dir, self.name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_names_the_session_of_its_last_two_components() {
        let local = Path::new("/home/me/.pi/agent/sessions/--home-me-p--/2025-01-01T00-00-00-000Z_abc.jsonl");
        let k = SessionKey::of_path(local);
        assert_eq!(k.dir, "--home-me-p--");
        assert_eq!(k.name, "2025-01-01T00-00-00-000Z_abc.jsonl");
        assert_eq!(k.to_string(), "--home-me-p--/2025-01-01T00-00-00-000Z_abc.jsonl");
        assert_eq!(SessionKey::of_path(&k.path()), k);
        let top = SessionKey::of_path(Path::new("/x.jsonl"));
        assert_eq!((top.dir.as_str(), top.name.as_str()), ("", "x.jsonl"));
        assert_eq!(top.path(), Path::new("/x.jsonl"));
        assert_eq!(SessionKey::dir_of(Path::new(ROOT)), "");
    }

    #[test]
    fn names_are_one_folder_and_one_file() {
        let k = |dir: &str, name: &str| SessionKey { dir: dir.into(), name: name.into() };
        assert_eq!(k("--home-me-p--", "2025-01-01T00-00-00-000Z_abc.jsonl").check(), Ok(()));
        assert_eq!(k("", "top.jsonl").check(), Ok(()));
        for (key, why) in [
            (k("..", "x.jsonl"), "a `.` or `..` part"),
            (k("d", ".."), "a `.` or `..` part"),
            (k(".", "x.jsonl"), "a `.` or `..` part"),
            (k("d", ""), "an empty file name"),
            (k("/etc", "x.jsonl"), "a path separator"),
            (k("d", "/etc/passwd"), "a path separator"),
            (k("a/../..", "x.jsonl"), "a path separator"),
            (k("d", "..\\x.jsonl"), "a path separator"),
            (k("d", "x\0.jsonl"), "a NUL character"),
            (k("d\n", "x.jsonl"), "a control character"),
            (k("d", &"x".repeat(256)), "a part longer than 255 bytes"),
        ] {
            assert_eq!(key.check(), Err(why), "{key:?}");
        }
        assert_eq!(k("d", "x\n.jsonl").shown(), "\"d/x\\n.jsonl\"");
        assert_eq!(k("d", "x.jsonl").shown(), "d/x.jsonl");
    }

    #[test]
    fn lock_keys_differ_by_name_and_are_stable() {
        let a = SessionKey { dir: "d".into(), name: "a.jsonl".into() };
        let b = SessionKey { dir: "d".into(), name: "b.jsonl".into() };
        let c = SessionKey { dir: "da".into(), name: ".jsonl".into() };
        assert_ne!(a.lock_key(), b.lock_key());
        assert_ne!(a.lock_key(), c.lock_key());
        assert_eq!(a.lock_key(), a.clone().lock_key());
    }
}
