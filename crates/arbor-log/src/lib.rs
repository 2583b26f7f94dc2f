//! The pi session log format: everything about one JSONL session file as bytes
//! and records, and nothing about trees.
//!
//! ```
//! use arbor_log::{EntryKind, EntryType, LastLine, Role, SessionLog};
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
//! assert_eq!(log.to_bytes(LastLine::AsRead), file);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! `arbor-log` owns the header and entry types of pi v1–v3 and oh-my-pi
//! ([`SessionHeader`], [`Entry`], [`EntryKind`], the bodies in
//! [`entries`]), the domain words as types ([`EntryType`], [`Role`]), a
//! borrowed view of agent messages ([`MessageView`]) and their constructors
//! ([`Message`]; more in [`messages`]), tolerant reading with diagnostics
//! ([`SessionLog`], [`Diagnostic`]), appending and atomic rewriting
//! ([`writer`]), the v1 → v2 → v3 migrations ([`migration`]), id generation
//! ([`ids`]) and time ([`Clock`], [`time`]).
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
mod compose;
mod diag;
mod entry;
mod error;
mod fast_head;
pub mod files;
mod head;
mod header;
pub mod idhash;
pub mod ids;
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

pub use clock::{Clock, FixedClock, SystemClock};
pub use compose::Message;
pub use diag::{Diagnostic, DiagnosticKind};
pub use entry::{Entry, EntryKind};
pub use error::LogError;
pub use header::{SessionHeader, CURRENT_VERSION};
pub use log::{LastLine, LineKind, LogLine, OwnedLine, SessionLog};
pub use message::MessageView;
pub use migrate::MigrationReport;
pub use vocab::{EntryType, Role};

pub mod entries {
    //! The body of each entry type ([`EntryKind`](crate::EntryKind)'s
    //! variants hold them), and [`Extra`], the fields Arbor does not know,
    //! kept in file order.
    //!
    //! ```
    //! use arbor_log::entries::Compaction;
    //! use arbor_log::{Entry, EntryKind};
    //!
    //! let line = r#"{"type":"compaction","id":"c1","parentId":"a1","timestamp":"2026-01-01T00:00:00.000Z","summary":"Short.","firstKeptEntryId":"a1","tokensBefore":900}"#;
    //! let entry = Entry::from_value(&serde_json::from_str(line)?)?;
    //! let EntryKind::Compaction(Compaction { summary, .. }) = &entry.kind else { panic!("a compaction") };
    //! assert_eq!(summary, "Short.");
    //! # Ok::<(), Box<dyn std::error::Error>>(())
    //! ```

    pub use crate::entry::{
        BranchSummary, Compaction, CustomEntry, CustomMessageEntry, LabelEntry, MessageEntry, ModeChange, ModelChange,
        NotAnEntry, SessionInfo, ThinkingLevelChange, TtsrInjection,
    };
    pub use crate::message::Extra;
}

pub mod messages {
    //! Agent messages beyond [`MessageView`](crate::MessageView) and the
    //! [`Message`](crate::Message) constructors: a message's blocks and tool
    //! calls, its content as text, the text search reads, and what the
    //! constructors take.
    //!
    //! ```
    //! use arbor_log::messages::content_text;
    //! use serde_json::json;
    //!
    //! let content = json!([{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]);
    //! assert_eq!(content_text(Some(&content), "\n"), "a\nb");
    //! ```

    pub use crate::compose::{Assistant, InvalidMessage, ToolCallSpec};
    pub use crate::message::{content_text, Block, ToolCall};
    pub use crate::text::searchable_text;
}

pub mod migration {
    //! The v1 → v2 → v3 migrations, one step per version, each idempotent
    //! and reporting what it changed ([`migrate`] runs every step a log needs).
    //!
    //! ```
    //! use arbor_log::ids::CounterIds;
    //! use arbor_log::migration::migrate;
    //! use serde_json::json;
    //!
    //! let mut records = vec![json!({"type": "session", "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"})];
    //! let report = migrate(&mut records, &mut CounterIds::default());
    //! assert_eq!(records[0]["version"], 3);
    //! assert!(!report.steps.is_empty());
    //! ```

    pub use crate::migrate::{migrate, v1_to_v2, v2_to_v3, MigrationStep};
}

pub mod records {
    //! What a parsed line is, without decoding it as an entry: a header, a
    //! title slot, and the format version a header names.
    //!
    //! ```
    //! use arbor_log::records::{is_header, version_of};
    //! use serde_json::json;
    //!
    //! let header = json!({"type": "session", "version": 3, "id": "s1"});
    //! assert!(is_header(&header));
    //! assert_eq!(version_of(header.get("version")), 3);
    //! ```

    pub use crate::header::is_header;
    pub use crate::log::is_title_slot;
    pub use crate::version::{version_in_line, version_of};
}

pub mod time {
    //! Timestamps as pi writes them: ISO 8601 in UTC with milliseconds.
    //!
    //! ```
    //! use arbor_log::time::{format_iso_ms, parse_iso_ms};
    //!
    //! assert_eq!(format_iso_ms(1_767_225_601_000), "2026-01-01T00:00:01.000Z");
    //! assert_eq!(parse_iso_ms("2026-01-01T00:00:01.000Z"), Some(1_767_225_601_000));
    //! ```

    pub use crate::clock::{format_iso_ms, parse_iso_ms};
}
