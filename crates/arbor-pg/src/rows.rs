//! The rows of a session: its `sessions` row ([`SessionRow`], with the
//! listing facts through its last line) and its lines, read in order.

use std::time::SystemTime;

use postgres::types::{ToSql, Type};
use postgres::{GenericClient, Row};

use arbor_tree::{ListingFacts, ListingKind};

use crate::key::SessionKey;

/// A session's row.
#[derive(Debug, Clone)]
pub(crate) struct SessionRow {
    pub id: i64,
    pub generation: i64,
    pub line_count: i64,
    pub byte_size: i64,
    pub created_at: SystemTime,
    pub changed_at: SystemTime,
    pub facts: ListingFacts,
}

/// The columns [`SessionRow::from_row`] reads, in its order.
pub(crate) const COLUMNS: &str = "id, generation, line_count, byte_size, created_at, changed_at, kind, \
     session_id, cwd, parent_session, created, version, title, message_count, first_message, newest_ms";

/// The facts columns, as `SET` assignments from parameter `$first` on (see [`FactsParams`]).
pub(crate) fn facts_assignments(first: usize) -> String {
    let cols = [
        "kind",
        "session_id",
        "cwd",
        "parent_session",
        "created",
        "version",
        "title",
        "message_count",
        "first_message",
        "newest_ms",
    ];
    cols.iter().enumerate().map(|(i, c)| format!("{c} = ${}", first + i)).collect::<Vec<_>>().join(", ")
}

impl SessionRow {
    /// The row whose [`COLUMNS`] start at column `at`.
    pub fn from_row(r: &Row, at: usize) -> SessionRow {
        let kind: i16 = r.get(at + 6);
        let version: i64 = r.get(at + 11);
        let count: i64 = r.get(at + 13);
        let line_count: i64 = r.get(at + 2);
        SessionRow {
            id: r.get(at),
            generation: r.get(at + 1),
            line_count,
            byte_size: r.get(at + 3),
            created_at: r.get(at + 4),
            changed_at: r.get(at + 5),
            facts: ListingFacts {
                kind: ListingKind::from_code(i64::from(kind)),
                lines: u64::try_from(line_count).unwrap_or_default(),
                id: r.get(at + 7),
                cwd: r.get(at + 8),
                parent_session: r.get(at + 9),
                created: r.get(at + 10),
                version: u64::try_from(version).unwrap_or_default(),
                name: r.get(at + 12),
                message_count: u64::try_from(count).unwrap_or_default(),
                first_message: r.get(at + 14),
                newest_ms: r.get(at + 15),
            },
        }
    }

    /// The row of `key`, if the session exists.
    pub fn find(c: &mut impl GenericClient, key: &SessionKey) -> Result<Option<SessionRow>, postgres::Error> {
        let sql = format!("SELECT {COLUMNS} FROM arbor.sessions WHERE dir = $1 AND name = $2");
        let row = c.query_typed_opt(&sql, &[(&key.dir, Type::TEXT), (&key.name, Type::TEXT)])?;
        Ok(row.map(|r| SessionRow::from_row(&r, 0)))
    }

    /// The modification time in ns since the epoch.
    pub fn changed_ns(&self) -> i128 {
        self.changed_at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i128)
    }

    /// The modification time in ms since the epoch.
    pub fn changed_ms(&self) -> i64 {
        (self.changed_ns() / 1_000_000) as i64
    }
}

/// The facts as the parameters of [`facts_assignments`].
#[derive(Debug)]
pub(crate) struct FactsParams {
    kind: i16,
    id: String,
    cwd: String,
    parent: Option<String>,
    created: String,
    version: i64,
    name: Option<String>,
    count: i64,
    first: Option<String>,
    newest: Option<i64>,
}

impl FactsParams {
    pub fn new(f: &ListingFacts) -> FactsParams {
        FactsParams {
            kind: f.kind.code() as i16,
            id: f.id.clone(),
            cwd: f.cwd.clone(),
            parent: f.parent_session.clone(),
            created: f.created.clone(),
            version: i64::try_from(f.version).unwrap_or(i64::MAX),
            name: f.name.clone(),
            count: i64::try_from(f.message_count).unwrap_or(i64::MAX),
            first: f.first_message.clone(),
            newest: f.newest_ms,
        }
    }

    pub fn params(&self) -> [(&(dyn ToSql + Sync), Type); 10] {
        [
            (&self.kind, Type::INT2),
            (&self.id, Type::TEXT),
            (&self.cwd, Type::TEXT),
            (&self.parent, Type::TEXT),
            (&self.created, Type::TEXT),
            (&self.version, Type::INT8),
            (&self.name, Type::TEXT),
            (&self.count, Type::INT8),
            (&self.first, Type::TEXT),
            (&self.newest, Type::INT8),
        ]
    }
}

/// Every line of session `id` from line `from_seq` on, concatenated, read as
/// a stream (one statement: a consistent snapshot), and how many lines.
pub(crate) fn read_lines(
    c: &mut impl GenericClient,
    id: i64,
    from_seq: i64,
) -> Result<(Vec<u8>, i64), postgres::Error> {
    use postgres::fallible_iterator::FallibleIterator;
    let mut out = Vec::new();
    let mut count = 0;
    let params: [(&(dyn ToSql + Sync), Type); 2] = [(&id, Type::INT8), (&from_seq, Type::INT8)];
    let mut rows =
        c.query_typed_raw("SELECT bytes FROM arbor.lines WHERE session = $1 AND seq >= $2 ORDER BY seq", params)?;
    while let Some(r) = rows.next()? {
        out.extend_from_slice(r.get::<_, &[u8]>(0));
        count += 1;
    }
    Ok((out, count))
}
