//! Finding sessions by a name a person gives: a file name (`FILE.jsonl`, in
//! any cwd folder) or a session id or a prefix of one, every match counted.

use rusqlite::{params, Connection};

use arbor_tree::sessions::{Candidate, SHOWN};

use crate::catalog::Catalog;
use crate::error::CatalogError;

/// What a name matched: how many sessions, and the first of them (exact ids
/// first, then by path), at most [`SHOWN`] + 1.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Named {
    /// Every session the name matched.
    pub count: usize,
    /// The first of them.
    pub first: Vec<Candidate>,
}

impl Catalog {
    /// The cataloged sessions `name` names (call [`Catalog::refresh`] on
    /// [`crate::Scope::All`] first): by file name when it ends in `.jsonl`
    /// (any file so named, session or not), else by session id or a prefix
    /// of one (sessions only).
    pub fn named(&mut self, name: &str) -> Result<Named, CatalogError> {
        self.guard(|c| find(c, name).map_err(|e| c.db_error(e)))
    }
}

fn find(cat: &Catalog, name: &str) -> rusqlite::Result<Named> {
    let conn: &Connection = cat.conn();
    // Compared byte for byte (SQLite's LIKE would ignore ASCII case).
    let sql = if name.ends_with(".jsonl") {
        "SELECT rel, 0, count(*) OVER () FROM sessions \
         WHERE substr(rel, length(dir) + 2) = ?1 ORDER BY rel LIMIT ?2"
    } else {
        "SELECT rel, id = ?1, count(*) OVER () FROM sessions \
         WHERE kind = 1 AND substr(id, 1, length(?1)) = ?1 ORDER BY id <> ?1, rel LIMIT ?2"
    };
    let mut stmt = conn.prepare(sql)?;
    let mut named = Named::default();
    let mut rows = stmt.query(params![name, (SHOWN + 1) as i64])?;
    while let Some(r) = rows.next()? {
        let rel: String = r.get(0)?;
        named.count = usize::try_from(r.get::<_, i64>(2)?).unwrap_or(usize::MAX);
        named.first.push(Candidate { path: cat.path_of(&rel), shown: rel, exact: r.get(1)? });
    }
    Ok(named)
}
