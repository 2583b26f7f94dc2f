//! What coding-agent sessions cost: tokens and cost of every assistant
//! reply, gathered by day, week, month, session, model, project or agent,
//! with the tree's view that no flat reader has.
//!
//! `arbor-usage` owns reading usage out of sessions ([`read_session`]:
//! every assistant reply with usage, and where it stands in its tree,
//! [`Place`]), finding the replies a fork or a resumed transcript copied
//! ([`find_copies`]: each counts once, in the session that has it first),
//! pricing replies that recorded no cost from Arbor's own table
//! ([`PriceTable`], offline), reports ([`report`], [`Report::to_json`]:
//! ccusage's field names where they mean the same), each leaf's branch
//! ([`branches`]), and the incremental [`Cache`] keyed by file stamps
//! (which also keeps the copies found, [`Usage::with_cache`]).
//! pi's sessions are read through `arbor-tree` (local files or any
//! [`arbor_tree::Store`]); Claude Code, Codex and OpenCode transcripts in
//! place through `arbor-interop`'s readers ([`scan`]), writing nothing.
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

pub use branch::{branches, Branch};
pub use cache::Cache;
pub use display::{dollars, short_count};
pub use error::UsageError;
pub use files::{files_under, pi_files};
pub use forks::{find_copies, Copies};
pub use model::{Agent, Place, Reply, SessionUsage, Tokens};
pub use opencode::opencode_sessions;
pub use period::{parse_date, zone};
pub use price::{Price, PriceTable, Rates};
pub use read::read_session;
pub use report::{
    report, Amount, Copied, Difference, Grouping, Report, ReportOptions, Row, SessionFacts, TreeCosts, Usage,
};
pub use scan::{scan, Scan, ScanOptions, Source};

/// jiff's civil dates, time zones and weekdays, as [`ReportOptions`] takes them.
pub use jiff;
