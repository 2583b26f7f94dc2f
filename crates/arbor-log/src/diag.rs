//! Diagnostics: what was wrong with a line, and where.

use std::fmt;

use crate::vocab::EntryType;

/// One problem found while reading a log. Bad data is never an `Err`.
///
/// ```
/// use arbor_log::{DiagnosticKind, SessionLog};
///
/// let log = SessionLog::read(&b"{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n42\n"[..])?;
/// let d = &log.diagnostics()[0];
/// assert_eq!((d.line, &d.kind), (2, &DiagnosticKind::NotObject { found: "a number" }));
/// assert_eq!(d.to_string(), format!("2: {}", d.kind));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// 1-based physical line number.
    pub line: usize,
    /// Byte offset of the start of the line.
    pub offset: u64,
    /// What was wrong.
    pub kind: DiagnosticKind,
}

/// The kinds of problems a reader reports.
///
/// ```
/// use arbor_log::DiagnosticKind;
///
/// let kind = DiagnosticKind::Malformed { error: "expected value".into() };
/// assert_eq!(kind.to_string(), "malformed JSON, line skipped: expected value");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiagnosticKind {
    /// The line is not valid JSON; it is skipped (and kept in the file).
    Malformed {
        /// serde_json's message.
        error: String,
    },
    /// The line is JSON but not an object; it is skipped.
    NotObject {
        /// What it is instead (`a number`, `an array`, …).
        found: &'static str,
    },
    /// The line had invalid UTF-8; it was read with U+FFFD replacements, as pi reads it.
    InvalidUtf8,
    /// The last line has no newline and does not parse: a torn write.
    TornTail {
        /// The torn line's length.
        bytes: usize,
    },
    /// The last line has no newline but parses; it is read (a writer adds the newline first).
    NoFinalNewline,
    /// The first record is not a session header with a string id: the file has no usable header.
    MissingHeader {
        /// What the first record is (`a "model_change" record`, …).
        found: String,
    },
    /// A further `type: "session"` record after the header (for example pi's duplicate-header bug); skipped.
    ExtraHeader,
    /// A record that is not a usable entry (no id, bad parentId, …); skipped by the tree.
    NotAnEntry {
        /// Why (see [`crate::entries::NotAnEntry`]).
        reason: String,
    },
    /// A known entry type whose body did not decode; kept raw, shown as `[type]`.
    MalformedEntry {
        /// The entry's type.
        entry_type: EntryType,
        /// Why the body did not decode.
        error: String,
    },
    /// An id seen before; the later line wins.
    DuplicateId {
        /// The id.
        id: String,
        /// The line that had it first.
        first_line: usize,
    },
    /// A parent cycle through this entry; walks stop at the repeated id.
    ParentCycle {
        /// The cycle's earliest entry, which becomes a root.
        id: String,
    },
    /// An omp-S title slot was read and folded into the header.
    TitleSlot,
}

impl fmt::Display for DiagnosticKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiagnosticKind::Malformed { error } => write!(f, "malformed JSON, line skipped: {error}"),
            DiagnosticKind::NotObject { found } => write!(f, "not a JSON object ({found}), line skipped"),
            DiagnosticKind::InvalidUtf8 => write!(f, "invalid UTF-8, read with replacement characters"),
            DiagnosticKind::TornTail { bytes } => {
                write!(f, "torn last line ({bytes} bytes without a newline), skipped")
            }
            DiagnosticKind::NoFinalNewline => write!(f, "last line has no newline"),
            DiagnosticKind::MissingHeader { found } => {
                write!(f, "no session header: the first record is {found}")
            }
            DiagnosticKind::ExtraHeader => write!(f, "extra session header, skipped"),
            DiagnosticKind::NotAnEntry { reason } => write!(f, "not an entry ({reason}), skipped"),
            DiagnosticKind::MalformedEntry { entry_type, error } => {
                write!(f, "malformed {entry_type} entry, kept as is: {error}")
            }
            DiagnosticKind::DuplicateId { id, first_line } => {
                write!(f, "duplicate id {id} (first on line {first_line}), the later line wins")
            }
            DiagnosticKind::ParentCycle { id } => write!(f, "parent cycle through {id}"),
            DiagnosticKind::TitleSlot => write!(f, "oh-my-pi title slot folded into the header"),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.line, self.kind)
    }
}

impl Diagnostic {
    /// `FILE:LINE: reason`, the form the CLI prints.
    pub fn with_file(&self, file: &str) -> String {
        format!("{file}:{}: {}", self.line, self.kind)
    }
}
