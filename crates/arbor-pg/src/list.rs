//! Finding sessions on the server: by name (a path, `DIR/FILE`, a file name
//! or a session id prefix, every match counted) and the listing, newest
//! first, from the facts each write keeps in the session's row (no session
//! is read).

use std::path::Path;

use postgres::types::Type;

use arbor_tree::sessions::{Candidate, Scope, SHOWN};
use arbor_tree::{sort_newest_first, SessionListInfo};

use crate::error::PgError;
use crate::key::SessionKey;
use crate::rows::{SessionRow, COLUMNS};
use crate::store::PgStore;

/// The directory a scope names, as the rows hold it.
pub(crate) fn scope_dir(scope: &Scope) -> Option<&str> {
    match scope {
        Scope::All => None,
        Scope::Dir(d) => Some(d.as_str()),
    }
}

impl PgStore {
    /// The session `name` names: a path or `DIR/FILE` (its last two
    /// components), a file name, or a session id or a unique prefix of one
    /// (a whole id wins over the ids it begins). No match is
    /// [`PgError::NoSession`], several [`PgError::Ambiguous`] with the true count.
    pub fn session_key(&self, name: &str) -> Result<SessionKey, PgError> {
        let name = name.trim();
        if name.contains('/') {
            return Ok(SessionKey::of_path(Path::new(name)));
        }
        let (count, first) = self.named(name)?;
        let server = self.server().shown().to_owned();
        match arbor_tree::sessions::choose(&server, name, count, first) {
            Ok(path) => Ok(SessionKey::of_path(&path)),
            Err(arbor_tree::sessions::SessionsError::Ambiguous { count, candidates, .. }) => Err(PgError::Ambiguous {
                server,
                name: name.to_owned(),
                total: u64::try_from(count).unwrap_or(u64::MAX),
                candidates,
            }),
            Err(_) => Err(PgError::NoSession { server, name: name.to_owned() }),
        }
    }

    /// How many sessions `name` (a file name, or an id or a prefix of one)
    /// matches, and the first of them, whole ids first.
    fn named(&self, name: &str) -> Result<(usize, Vec<Candidate>), PgError> {
        let limit = (SHOWN + 1) as i64;
        let name = name.to_owned();
        let rows: Vec<(String, String, bool, i64)> = self.read_bounded(move |c| {
            let rows = if name.ends_with(".jsonl") {
                c.query_typed(
                    "SELECT dir, name, false, count(*) OVER () FROM arbor.sessions \
                     WHERE name = $1 ORDER BY dir LIMIT $2",
                    &[(&name, Type::TEXT), (&limit, Type::INT8)],
                )?
            } else {
                // Compared as text, byte for byte: no pattern characters to escape.
                c.query_typed(
                    "SELECT dir, name, session_id = $1, count(*) OVER () FROM arbor.sessions \
                     WHERE left(session_id, length($1)) = $1 AND name LIKE '%.jsonl' \
                     ORDER BY session_id <> $1, dir, name LIMIT $2",
                    &[(&name, Type::TEXT), (&limit, Type::INT8)],
                )?
            };
            Ok(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2), r.get(3))).collect())
        })?;
        let count = rows.first().map_or(0, |r| usize::try_from(r.3).unwrap_or(usize::MAX));
        let first = rows
            .into_iter()
            .map(|(dir, name, exact, _)| {
                let key = SessionKey { dir, name };
                Candidate { path: key.path(), shown: key.to_string(), exact }
            })
            .collect();
        Ok((count, first))
    }

    /// pi's `SessionInfo` of the sessions of directory `dir` (every
    /// directory with `None`), newest first, from the facts in the sessions'
    /// rows; paths are the store's (`/DIR/FILE`) and `all_messages_text` is
    /// left empty.
    pub(crate) fn listed_rows(&self, dir: Option<&str>) -> Result<Vec<SessionListInfo>, PgError> {
        let dir = dir.map(str::to_owned);
        let mut out: Vec<SessionListInfo> = self.read_bounded(move |c| {
            let sql = format!(
                "SELECT dir, name, {COLUMNS} FROM arbor.sessions \
                 WHERE kind = 1 AND name LIKE '%.jsonl' AND ($1::text IS NULL OR dir = $1)"
            );
            let rows = c.query_typed(&sql, &[(&dir, Type::TEXT)])?;
            Ok(rows
                .iter()
                .filter_map(|r| {
                    let key = SessionKey { dir: r.get(0), name: r.get(1) };
                    let row = SessionRow::from_row(r, 2);
                    row.facts.to_info(&key.path(), Some(row.changed_ms()), String::new())
                })
                .collect())
        })?;
        sort_newest_first(&mut out);
        Ok(out)
    }

    /// Every session file on the server (of `cwd` with `Some`), sorted by
    /// name: what `arbor pull --all` pulls (damaged ones included).
    pub fn keys(&self, cwd: Option<&str>) -> Result<Vec<SessionKey>, PgError> {
        let dir = cwd.map(arbor_tree::paths::encode_cwd);
        self.read_bounded(move |c| {
            let rows = c.query_typed(
                "SELECT dir, name FROM arbor.sessions \
                 WHERE name LIKE '%.jsonl' AND ($1::text IS NULL OR dir = $1) ORDER BY dir, name",
                &[(&dir, Type::TEXT)],
            )?;
            Ok(rows.iter().map(|r| SessionKey { dir: r.get(0), name: r.get(1) }).collect())
        })
    }
}
