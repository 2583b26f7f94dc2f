//! Finding sessions on the server: by name (a path, `DIR/FILE`, a file name
//! or a session id prefix) and the listing, newest first, from the facts
//! each write keeps in the session's row (no session is read).

use std::path::Path;

use postgres::types::Type;

use arbor_tree::paths::encode_cwd;
use arbor_tree::{sort_newest_first, SessionListInfo};

use crate::error::PgError;
use crate::key::SessionKey;
use crate::rows::{SessionRow, COLUMNS};
use crate::store::PgStore;

/// How many candidates an ambiguous name lists (it says how many there are in all).
const SHOWN: i64 = 8;

impl PgStore {
    /// The session `name` names: a path or `DIR/FILE` (its last two
    /// components), a file name, or a session id or a unique prefix of one.
    pub fn resolve(&self, name: &str) -> Result<SessionKey, PgError> {
        let name = name.trim();
        if name.contains('/') {
            return Ok(SessionKey::of_path(Path::new(name)));
        }
        let server = self.server().shown().to_owned();
        let found: Vec<(String, String, String, i64)> = self.read(|c| {
            let rows = if name.ends_with(".jsonl") {
                c.query_typed(
                    "SELECT dir, name, session_id, count(*) OVER () FROM arbor.sessions WHERE name = $1 ORDER BY dir LIMIT $2",
                    &[(&name, Type::TEXT), (&(SHOWN + 1), Type::INT8)],
                )?
            } else {
                let pattern = format!("{}%", name.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
                c.query_typed(
                    "SELECT dir, name, session_id, count(*) OVER () FROM arbor.sessions \
                     WHERE session_id LIKE $1 AND name LIKE '%.jsonl' ORDER BY session_id <> $2, dir, name LIMIT $3",
                    &[(&pattern, Type::TEXT), (&name, Type::TEXT), (&(SHOWN + 1), Type::INT8)],
                )?
            };
            Ok(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2), r.get(3))).collect())
        })?;
        let key =
            |(dir, name, _, _): &(String, String, String, i64)| SessionKey { dir: dir.clone(), name: name.clone() };
        match found.as_slice() {
            [] => Err(PgError::NoSession { server, name: name.to_owned() }),
            [one] => Ok(key(one)),
            // An exact id wins over ids it is a prefix of.
            [first, ..] if first.2 == name => Ok(key(first)),
            many => Err(PgError::Ambiguous {
                server,
                name: name.to_owned(),
                total: u64::try_from(many[0].3).unwrap_or_default(),
                candidates: many.iter().take(SHOWN as usize).map(|c| key(c).to_string()).collect(),
            }),
        }
    }

    /// pi's `SessionInfo` of the sessions of `cwd` (every cwd with `None`),
    /// newest first, from the facts in the sessions' rows; paths are the
    /// store's (`/DIR/FILE`) and `all_messages_text` is left empty (see
    /// [`arbor_tree::read_session_info`] through the store for it).
    pub fn sessions(&self, cwd: Option<&str>) -> Result<Vec<SessionListInfo>, PgError> {
        let dir = cwd.map(encode_cwd);
        let mut out: Vec<SessionListInfo> = self.read(|c| {
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
        let dir = cwd.map(encode_cwd);
        self.read(|c| {
            let rows = c.query_typed(
                "SELECT dir, name FROM arbor.sessions \
                 WHERE name LIKE '%.jsonl' AND ($1::text IS NULL OR dir = $1) ORDER BY dir, name",
                &[(&dir, Type::TEXT)],
            )?;
            Ok(rows.iter().map(|r| SessionKey { dir: r.get(0), name: r.get(1) }).collect())
        })
    }
}
