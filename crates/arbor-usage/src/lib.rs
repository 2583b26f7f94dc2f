//! What coding-agent sessions cost: tokens and cost of every assistant
//! reply, gathered by day, week, month, session, model, project or agent,
//! with the tree's view that no flat reader has.
//!
//! `arbor-usage` owns reading usage out of sessions ([`read_session`]:
//! every assistant reply with usage, and where it stands in its tree,
//! [`Place`]), finding the replies a fork or a resumed transcript copied
//! ([`tree::find_copies`]: each counts once, in the session that has it first),
//! pricing replies that recorded no cost from Arbor's own table
//! ([`prices::PriceTable`], offline), reports ([`report`], [`Report::to_json`]:
//! ccusage's field names where they mean the same), each leaf's branch
//! ([`tree::branches`]), and the incremental [`Cache`] keyed by file stamps
//! (which also keeps the copies found, [`Usage::with_cache`]).
//! pi's sessions are read through `arbor-tree` (local files or any
//! [`arbor_tree::Store`]); Claude Code, Codex and OpenCode transcripts in
//! place through `arbor-interop`'s readers ([`scan`]; the files it finds,
//! [`sources`]), writing nothing. Dates and zones are read by [`dates`], and
//! numbers shown by [`format`](mod@format).
//!
//! It does not know terminals, command lines or where Arbor's cache
//! directory is: the caller names the cache file ([`Cache::open`]); the
//! default ([`Cache::in_memory`]) writes nothing. It is synchronous and
//! never prints.
//!
//! Promises:
//! - a reply counts once, however many sessions hold it;
//! - a report's rows add up to its totals, and each row's tree costs
//!   ([`TreeCosts`]) add up to the row;
//! - a file that cannot be read is named in [`Scan::unreadable`], and the
//!   others are still reported;
//! - a file whose stamp did not change is not read again when the cache
//!   knows it.
//!
//! ```
//! use arbor_tree::{OpenMode, Session, SessionOptions};
//! use arbor_usage::{read_session, report, Agent, Grouping, ReportOptions, Usage};
//!
//! let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/demo/demo.jsonl");
//! let s = Session::open(file.as_ref(), OpenMode::ReadOnly, SessionOptions::default().with_index_dir(None))?;
//! let usage = Usage::new(vec![read_session(&s, Agent::Pi, file)?]);
//! let daily = report(&usage, &ReportOptions::new(Grouping::Daily));
//! assert_eq!(daily.rows.iter().map(|r| r.total.replies).sum::<u64>(), daily.totals.replies);
//! # Ok::<(), arbor_tree::TreeError>(())
//! ```

#![deny(missing_docs)]

mod branch;
mod cache;
mod display;
mod error;
mod files;
mod forks;
mod model;
mod opencode;
mod period;
mod price;
mod read;
mod report;
mod scan;

pub use cache::Cache;
pub use error::UsageError;
pub use model::{Agent, Place, Reply, SessionUsage, Tokens};
pub use read::read_session;
pub use report::{
    report, Amount, Copied, Difference, Grouping, Report, ReportOptions, Row, SessionFacts, TreeCosts, Usage,
};
pub use scan::{scan, Scan, ScanOptions, Source};

pub mod dates {
    //! Dates and time zones as a report's options take them.
    //!
    //! ```
    //! use arbor_usage::dates::{parse_date, zone};
    //!
    //! assert_eq!(parse_date("2026-01-31")?.to_string(), "2026-01-31");
    //! assert!(zone("Europe/Berlin").is_ok());
    //! assert!(parse_date("31.1.2026").is_err());
    //! # Ok::<(), arbor_usage::UsageError>(())
    //! ```

    pub use crate::period::{parse_date, zone};
}

pub mod format {
    //! Numbers as reports show them: counts shortened, dollars to the cent.
    //!
    //! ```
    //! use arbor_usage::format::{dollars, short_count};
    //!
    //! assert_eq!(short_count(1_234_567), "1.2M");
    //! assert_eq!(dollars(3.14159), "$3.14");
    //! ```

    pub use crate::display::{dollars, short_count};
}

pub mod prices {
    //! Arbor's own price table, offline: what a reply that recorded no cost
    //! would have cost ([`PriceTable`], a model's [`Price`], its [`Rates`]).
    //!
    //! ```
    //! use arbor_usage::prices::PriceTable;
    //!
    //! let table = PriceTable::builtin();
    //! assert!(table.find("claude-sonnet-4-5").is_some());
    //! ```

    pub use crate::price::{Price, PriceTable, Rates};
}

pub mod sources {
    //! Where sessions are found: pi's files under a sessions root, files
    //! with a suffix under a folder, OpenCode's stored sessions.
    //!
    //! ```
    //! use arbor_usage::sources::pi_files;
    //!
    //! let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures");
    //! assert!(pi_files(root.as_ref(), None).is_ok());
    //! ```

    pub use crate::files::{files_under, pi_files};
    pub use crate::opencode::opencode_sessions;
}

pub mod tree {
    //! The tree's view of usage: each leaf's branch and what it cost
    //! ([`branches`]), and the replies forks and resumed transcripts copied
    //! ([`find_copies`]).
    //!
    //! ```
    //! use arbor_tree::{OpenMode, Session, SessionOptions};
    //! use arbor_usage::prices::PriceTable;
    //! use arbor_usage::tree::branches;
    //!
    //! let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/demo/demo.jsonl");
    //! let s = Session::open(file.as_ref(), OpenMode::ReadOnly, SessionOptions::default())?;
    //! assert!(!branches(&s, &PriceTable::builtin())?.is_empty());
    //! # Ok::<(), Box<dyn std::error::Error>>(())
    //! ```

    pub use crate::branch::{branches, Branch};
    pub use crate::forks::{find_copies, Copies};
}

/// jiff's civil dates, time zones and weekdays, as [`ReportOptions`] takes them.
pub use jiff;
