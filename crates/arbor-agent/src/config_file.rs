//! Reading a configuration file (a hooks file, pi's `settings.json` and
//! `models.json`, Arbor's settings): only a regular file, and at most
//! [`CONFIG_FILE_LIMIT`] bytes of it. A FIFO or a device named there (by
//! mistake or on purpose) would otherwise block the reader forever or feed
//! it until memory runs out; it is refused with one line naming the file.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The most bytes a configuration file may have (4 MiB: far more than any
/// real one, small enough that reading it costs nothing).
pub const CONFIG_FILE_LIMIT: u64 = 4 * 1024 * 1024;

/// A configuration file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// Opening or reading failed (missing, no permission, not UTF-8).
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Not a regular file: a FIFO, a device, a socket or a directory.
    #[error("{}: not a regular file (a {kind}); a configuration file must be a regular file", path.display())]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// Larger than [`CONFIG_FILE_LIMIT`].
    #[error("{}: larger than {} MiB, the most a configuration file may have; not read", path.display(), CONFIG_FILE_LIMIT >> 20)]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
}

impl ConfigFileError {
    /// True when the file does not exist (an optional file is then simply absent).
    pub fn is_not_found(&self) -> bool {
        matches!(self, ConfigFileError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }

    /// What is wrong, without the file's name.
    pub fn reason(&self) -> String {
        match self {
            ConfigFileError::Io { source, .. } => source.to_string(),
            ConfigFileError::NotRegular { kind, .. } => {
                format!("not a regular file (a {kind}); a configuration file must be a regular file")
            }
            ConfigFileError::TooLarge { .. } => {
                format!("larger than {} MiB, the most a configuration file may have; not read", CONFIG_FILE_LIMIT >> 20)
            }
        }
    }
}

/// What a file that is not a regular one is, for the error.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "FIFO";
        }
        if t.is_char_device() || t.is_block_device() {
            return "device";
        }
        if t.is_socket() {
            return "socket";
        }
    }
    "special file"
}

/// Opens `path` for reading without waiting for a writer (a FIFO opened
/// normally blocks until one comes).
fn open(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    options.open(path)
}

/// Reads the configuration file at `path` (a link to a regular file is
/// followed): its text, or why not.
pub fn read_config_file(path: &Path) -> Result<String, ConfigFileError> {
    let io = |source| ConfigFileError::Io { path: path.to_owned(), source };
    let file = open(path).map_err(io)?;
    // The type of what was opened, not of what the name pointed at a moment before.
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(ConfigFileError::NotRegular { path: path.to_owned(), kind: kind_of(&meta) });
    }
    let mut bytes = Vec::new();
    file.take(CONFIG_FILE_LIMIT + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > CONFIG_FILE_LIMIT {
        return Err(ConfigFileError::TooLarge { path: path.to_owned() });
    }
    String::from_utf8(bytes).map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_and_the_rest_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("ok.json");
        std::fs::write(&ok, "{}").unwrap();
        assert_eq!(read_config_file(&ok).unwrap(), "{}");
        let missing = read_config_file(&dir.path().join("none.json")).unwrap_err();
        assert!(missing.is_not_found());
        let e = read_config_file(dir.path()).unwrap_err();
        assert!(e.to_string().contains("not a regular file (a directory)"), "{e}");
        let e = read_config_file(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().starts_with("/dev/zero: not a regular file (a device)"), "{e}");
        let big = dir.path().join("big.toml");
        std::fs::write(&big, vec![b' '; CONFIG_FILE_LIMIT as usize + 1]).unwrap();
        let e = read_config_file(&big).unwrap_err();
        assert!(e.to_string().contains("larger than 4 MiB"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("settings.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let e = read_config_file(&fifo).unwrap_err();
        assert!(e.to_string().contains("not a regular file (a FIFO)"), "{e}");
    }
}
