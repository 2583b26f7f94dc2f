//! Search over session files, one engine for every place sessions live: pi's
//! picker syntax ([`parse_query`], from `arbor-tree`'s sessions seam), a matcher that finds literals and
//! regexes in an entry's text ([`Pattern`]), a scanner that reads a file's
//! bytes at ripgrep's speed and decodes only the lines that may match
//! ([`scan_ranges`]), the gram filter that lets a search skip the ranges
//! that cannot hold a literal ([`grams`]), and the ordered parallel driver
//! that stops a search as soon as its first hits are certain ([`ordered()`]).
//!
//! What matches: a token is found in an entry's text as written, ASCII
//! letters in either case, other cased letters by Unicode's simple case
//! folding; it also matches an entry's id, or its session's id (whole or its
//! first 8 or more characters). A `"phrase"` is its words in order with any
//! whitespace between them. `re:REGEX` is matched case-insensitively. With
//! fuzzy matching, a token may instead match a word that starts with its
//! first character and holds the rest in order (pi's `fuzzyMatch`).
//!
//! What it promises: the raw bytes of a line, the filter of a range and the
//! text of an entry are checked in that order, each a consequence of the one
//! after, so nothing that matches is skipped (the recall tests check every
//! literal ripgrep finds). JSON escapes are handled: literals are looked
//! for in the escaped form every common writer uses, and lines written with
//! other escapes (`\u00e9`, `\/`) are decoded.
//!
//! It knows nothing of catalogs, servers or terminals: a backend chooses the
//! sessions, their order and the ranges to read, keeps the filters, and
//! turns an [`EntryHit`] into what it shows. It never prints and writes
//! nothing. Synchronous.
//!
//! ```
//! use arbor_search::{parse_query, scan_ranges, Mode, Pattern, Range};
//!
//! let file = br#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}
//! {"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"Back up to openclaw-backup.git"}}
//! "#.to_vec();
//! let pattern = Pattern::new(&parse_query("OPENCLAW").unwrap()).unwrap().unwrap();
//! let whole = Range { start: 0, end: file.len() as u64, build: false };
//! let found = scan_ranges(&file, &[whole], &pattern.in_session("s1"), Mode::Exact, 20).unwrap();
//! assert_eq!(found.hits[0].entry_id, "a1");
//! assert_eq!(found.hits[0].snippet, "Back up to openclaw-backup.git");
//! ```

#![deny(missing_docs)]

mod escape;
mod fold;
pub mod grams;
pub mod ordered;
mod pattern;
mod scan;
mod snippet;

pub use arbor_tree::sessions::{fuzzy_match, parse_query, Query, Relevance, Token, TokenKind};
pub use ordered::{ordered, Flow};
pub use pattern::{check_size, InSession, Pattern, PatternError, MAX_QUERY_BYTES, MAX_QUERY_WORDS};
pub use scan::{scan_ranges, scan_values, EntryHit, Mode, Range, Scanned, COLUMN_BYTES, MAX_LINE};
pub use snippet::snippet;
