//! The pi session log format: everything about one JSONL session file as bytes
//! and records, and nothing about trees.
//!
//! `arbor-log` owns the header and entry types of pi v1–v3 and oh-my-pi
//! ([`SessionHeader`], [`Entry`], [`EntryKind`]), typed views of agent messages
//! ([`AgentMessage`]), tolerant streaming reading with diagnostics
//! ([`SessionLog`], [`LineReader`]), appending and atomic rewriting
//! ([`Appender`], [`atomic_write`]), the v1 → v2 → v3 migrations ([`migrate`]),
//! id generation ([`IdGenerator`]) and time ([`Clock`]), and the light parallel
//! scan ([`ScannedLog`], [`scan_source`]) that validates every line exactly as
//! the streaming reader does but keeps only what an index needs (type, id,
//! parent, time, role, byte offsets), so bodies can be decoded on demand
//! through positioned reads ([`ReadAt`]).
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

mod clock;
mod diag;
mod entry;
mod error;
mod fast_head;
mod header;
mod idhash;
mod ids;
pub mod json;
mod log;
mod message;
mod migrate;
mod reader;
mod scan;
mod writer;

pub use clock::{format_iso_ms, parse_iso_ms, Clock, FixedClock, SystemClock};
pub use diag::{Diagnostic, DiagnosticKind};
pub use entry::{
    BranchSummary, Compaction, CustomEntry, CustomMessageEntry, Entry, EntryKind, LabelEntry, MessageEntry, ModeChange,
    ModelChange, NotAnEntry, SessionInfo, ThinkingLevelChange, TtsrInjection,
};
pub use error::LogError;
pub use header::{is_header, version_of, SessionHeader, CURRENT_VERSION};
pub use idhash::{IdHash, IdMap};
pub use ids::{is_pi_entry_id, CounterIds, IdGenerator, RandomIds, SeededIds};
pub use log::{is_title_slot, LineKind, LogLine, OwnedLine, SessionLog};
pub use message::{
    message_role, AgentMessage, AssistantMessage, BashExecutionMessage, Content, ContentBlock, CustomRoleMessage,
    Extra, ToolResultMessage, Usage, UserMessage,
};
pub use migrate::{migrate, v1_to_v2, v2_to_v3, MigrationReport, MigrationStep};
pub use reader::{json_kind, parse_line, parse_line_detail, trim_line, LineReader, Parsed, RawLine};
pub use scan::{
    full_entry, read_exact_at, scan_line, scan_source, ParentField, ReadAt, RecordHead, ScanKind, ScannedEntry,
    ScannedLine, ScannedLog,
};
pub use writer::{atomic_write, backup_copy, repair_tail, side_file, sync_dir, Appender, Durability, TailRepair};
