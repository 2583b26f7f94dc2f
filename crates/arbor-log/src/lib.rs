//! The pi session log format: everything about one JSONL session file as bytes
//! and records, and nothing about trees.
//!
//! ```
//! use arbor_log::{EntryKind, EntryType, Role, SessionLog};
//!
//! let file = br#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}
//! {"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}
//! not json
//! {"type":"future_thing","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z","x":1}
//! "#;
//! let log = SessionLog::read(&file[..])?;
//! assert_eq!(log.header().map(|h| h.id), Some("s1".to_owned()));
//! // Bad data is a diagnostic with a line number, never an error.
//! assert_eq!(log.diagnostics()[0].to_string(), "3: malformed JSON, line skipped: expected ident at line 1 column 2");
//! let (entries, _entry_diagnostics) = log.entries_with_diagnostics();
//! let (_, first) = &entries[0];
//! assert_eq!(first.message_role(), Some(Role::User));
//! if let EntryKind::Message(m) = &first.kind {
//!     assert_eq!(m.view().text(""), "hi");
//! }
//! // A type Arbor does not know is kept whole.
//! assert_eq!(entries[1].1.entry_type(), EntryType::Other("future_thing".into()));
//! // An unchanged log writes back byte for byte.
//! assert_eq!(log.to_bytes(false), file);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! `arbor-log` owns the header and entry types of pi v1–v3 and oh-my-pi
//! ([`SessionHeader`], [`Entry`], [`EntryKind`]), the domain words as types
//! ([`EntryType`], [`Role`]), a borrowed view of agent messages
//! ([`MessageView`]), tolerant reading with diagnostics ([`SessionLog`],
//! [`Diagnostic`]), appending and atomic rewriting ([`Appender`],
//! [`atomic_write`]), the v1 → v2 → v3 migrations ([`migrate`]), id generation
//! ([`IdGenerator`]) and time ([`Clock`]).
//!
//! The plumbing sits in modules: [`reader`] (physical lines, parsed as pi
//! parses them), [`scan`] (the light parallel scan that validates every line
//! exactly as the reader does but keeps only what an index needs: type, id,
//! parent, time, role, byte offsets, so bodies can be decoded on demand
//! through positioned reads), [`writer`] (tail repair, backups, side files),
//! [`stream`] (every line once, in order, with what `check` and `repair` need),
//! [`long`] (a line too long to hold, read in windows: its long strings cut
//! to previews, the rest kept, so the scans never hold it),
//! [`idhash`] (maps keyed by entry ids) and [`json`] (JSON as JavaScript's
//! `JSON.parse` reads it and `JSON.stringify` writes it: lone surrogates,
//! numbers beyond `f64`, any depth).
//!
//! It does not know about parents and children, leaves, labels resolution or
//! contexts: that is `arbor-tree` and above. It is synchronous and never prints.
//!
//! Promises:
//! - reading never fails on bad data: every problem is a [`Diagnostic`] with a
//!   line number, and only I/O is an `Err`;
//! - reading never modifies a file, and writing an unchanged [`SessionLog`]
//!   reproduces the file byte for byte;
//! - unknown entry types and unknown fields are kept verbatim;
//! - an append never glues a new line onto a torn tail.

#![deny(missing_docs)]

mod clock;
mod diag;
mod entry;
mod error;
mod fast_head;
pub mod files;
mod head;
mod header;
pub mod idhash;
mod ids;
pub mod json;
mod log;
pub mod long;
mod message;
mod migrate;
mod read_at;
pub mod reader;
pub mod scan;
mod scanned;
mod span;
pub mod stream;
mod text;
mod version;
mod vocab;
pub mod writer;

pub use clock::{format_iso_ms, parse_iso_ms, Clock, FixedClock, SystemClock};
pub use diag::{Diagnostic, DiagnosticKind};
pub use entry::{
    BranchSummary, Compaction, CustomEntry, CustomMessageEntry, Entry, EntryKind, LabelEntry, MessageEntry, ModeChange,
    ModelChange, NotAnEntry, SessionInfo, ThinkingLevelChange, TtsrInjection,
};
pub use error::LogError;
pub use header::{is_header, SessionHeader, CURRENT_VERSION};
pub use ids::{is_pi_entry_id, CounterIds, IdGenerator, RandomIds, SeededIds};
pub use log::{is_title_slot, LineKind, LogLine, OwnedLine, SessionLog};
pub use message::{content_text, Block, Extra, MessageView, ToolCall};
pub use migrate::{migrate, v1_to_v2, v2_to_v3, MigrationReport, MigrationStep};
pub use text::searchable_text;
pub use version::{version_in_line, version_of};
pub use vocab::{EntryType, Role};
pub use writer::{atomic_write, atomic_write_file, Appender, Durability, TailRepair};
