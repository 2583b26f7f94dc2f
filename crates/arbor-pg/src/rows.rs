//! The rows of a session: its `sessions` row ([`SessionRow`], with the
//! listing facts through its last line) and its lines, read in order.

use std::time::SystemTime;

use postgres::fallible_iterator::FallibleIterator;
use postgres::types::{ToSql, Type};
use postgres::{GenericClient, Row};

use arbor_tree::listing::{ListingFacts, ListingKind};

use crate::error::SqlError;
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

/// Every line of session `id` from line `from_seq` on, concatenated, and
/// how many lines: one statement (a consistent snapshot), streamed in
/// COPY's binary format (a third faster than rows for a large session).
pub(crate) fn read_lines(c: &mut impl GenericClient, id: i64, from_seq: i64) -> Result<(Vec<u8>, i64), SqlError> {
    // COPY takes no parameters; the two numbers are formatted, never text.
    let sql = format!(
        "COPY (SELECT bytes FROM arbor.lines WHERE session = {id} AND seq >= {from_seq} ORDER BY seq) \
         TO STDOUT (FORMAT binary)"
    );
    let reader = c.copy_out(&sql)?;
    let mut out = Vec::new();
    let count = copy_binary_fields(std::io::BufReader::with_capacity(1 << 20, reader), &mut out).map_err(copy_error)?;
    Ok((out, count))
}

/// Bytes `[start, end)` of session `id` at generation `generation` (fewer
/// when the session is not at that generation any more): one COPY of the
/// lines' slices that cover the range, by their offsets.
pub(crate) fn read_range(
    c: &mut impl GenericClient,
    id: i64,
    generation: i64,
    start: i64,
    end: i64,
) -> Result<Vec<u8>, SqlError> {
    // COPY takes no parameters; the numbers are formatted, never text.
    let sql = format!(
        "COPY (SELECT substring(l.bytes FROM (greatest(l.off, {start}) - l.off + 1)::int \
                                FOR (least(l.off + length(l.bytes), {end}) - greatest(l.off, {start}))::int) \
               FROM arbor.lines l JOIN arbor.sessions s ON s.id = l.session AND s.generation = {generation} \
               WHERE l.session = {id} \
                 AND l.off >= coalesce((SELECT max(off) FROM arbor.lines WHERE session = {id} AND off <= {start}), 0) \
                 AND l.off < {end} \
               ORDER BY l.off) TO STDOUT (FORMAT binary)"
    );
    let reader = c.copy_out(&sql)?;
    let mut out = Vec::with_capacity(usize::try_from(end - start).unwrap_or_default());
    copy_binary_fields(std::io::BufReader::with_capacity(1 << 16, reader), &mut out).map_err(copy_error)?;
    Ok(out)
}

/// Bytes `ranges` (`[start, end)` each, in this order) of session `id` at
/// generation `generation`, one after the other (fewer when the session is
/// not at that generation any more): one COPY for them all, of the lines'
/// slices that cover each range (a line inside a range is sent whole).
///
/// A range that starts at the last byte of a line followed by another (a
/// line placed by an index is read with the byte before it) gets that
/// byte as the newline every such line ends with (lines are stored split
/// after each newline, [`crate::lines::split_lines`]; `len`, the session's
/// size, tells which lines have one after them), instead of the line being
/// decompressed on the server for one byte.
pub(crate) fn read_ranges(
    c: &mut impl GenericClient,
    id: i64,
    generation: i64,
    len: i64,
    ranges: &[(i64, i64)],
) -> Result<Vec<u8>, SqlError> {
    let (starts, ends): (Vec<i64>, Vec<i64>) = ranges.iter().copied().unzip();
    // One round trip: the ranges go as parameters (no statement prepared
    // first, no array literal parsed). The connection runs without JIT
    // (`Server::connect`): the planner takes each range for thousands of
    // rows, which put a large batch past jit_above_cost, and compiling the
    // query (20-25 ms) cost more than running it.
    let mut rows = c.query_typed_raw(
        "SELECT CASE WHEN l.off >= r.s AND l.off + length(l.bytes) <= r.e THEN l.bytes \
                     WHEN l.off < r.s AND l.off + length(l.bytes) = r.s + 1 AND r.s + 1 < $3 \
                          THEN '\\x0a'::bytea \
                     ELSE substring(l.bytes FROM (greatest(l.off, r.s) - l.off + 1)::int \
                                    FOR (least(l.off + length(l.bytes), r.e) - greatest(l.off, r.s))::int) END \
           FROM unnest($4::int8[], $5::int8[]) WITH ORDINALITY AS r(s, e, i) \
           CROSS JOIN LATERAL (SELECT off, bytes FROM arbor.lines \
               WHERE session = $1 AND off < r.e \
                 AND off >= coalesce((SELECT max(off) FROM arbor.lines WHERE session = $1 AND off <= r.s), 0)) l \
           WHERE EXISTS (SELECT 1 FROM arbor.sessions WHERE id = $1 AND generation = $2) \
           ORDER BY r.i, l.off",
        [
            (&id as &(dyn ToSql + Sync), Type::INT8),
            (&generation, Type::INT8),
            (&len, Type::INT8),
            (&starts, Type::INT8_ARRAY),
            (&ends, Type::INT8_ARRAY),
        ],
    )?;
    let total: i64 = ranges.iter().map(|(s, e)| e - s).sum();
    let mut out = Vec::with_capacity(usize::try_from(total).unwrap_or_default());
    while let Some(row) = rows.next()? {
        out.extend_from_slice(row.get::<_, &[u8]>(0));
    }
    Ok(out)
}

/// Appends the one field of every tuple of a binary COPY stream to `out`; the number of tuples.
fn copy_binary_fields(mut r: impl std::io::Read, out: &mut Vec<u8>) -> std::io::Result<i64> {
    use std::io::{Error, ErrorKind};
    let bad = |what: &str| Error::new(ErrorKind::InvalidData, format!("COPY stream: {what}"));
    let mut head = [0u8; 19];
    r.read_exact(&mut head)?;
    if &head[..11] != b"PGCOPY\n\xff\r\n\0" {
        return Err(bad("no signature"));
    }
    let ext = u32::from_be_bytes([head[15], head[16], head[17], head[18]]);
    if ext > 1 << 16 {
        return Err(bad("an oversized header extension"));
    }
    let mut skip = vec![0u8; ext as usize];
    r.read_exact(&mut skip)?;
    let mut count = 0;
    loop {
        let mut n = [0u8; 2];
        r.read_exact(&mut n)?;
        match i16::from_be_bytes(n) {
            -1 => return Ok(count),
            1 => {}
            _ => return Err(bad("a tuple of other than one field")),
        }
        let mut len = [0u8; 4];
        r.read_exact(&mut len)?;
        let len = usize::try_from(i32::from_be_bytes(len)).map_err(|_| bad("a null line"))?;
        let at = out.len();
        out.resize(at + len, 0);
        r.read_exact(&mut out[at..])?;
        count += 1;
    }
}

/// A broken COPY stream: the driver's error inside it (a lost connection stays one), or what was wrong.
fn copy_error(e: std::io::Error) -> SqlError {
    let text = e.to_string();
    match e.into_inner().map(|inner| inner.downcast::<postgres::Error>()) {
        Some(Ok(pg)) => SqlError::Pg(*pg),
        _ => SqlError::Invariant(text),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn stream(fields: &[Option<&[u8]>]) -> Vec<u8> {
        let mut s = b"PGCOPY\n\xff\r\n\0".to_vec();
        s.extend([0, 0, 0, 0, 0, 0, 0, 0]);
        for f in fields {
            s.extend(1i16.to_be_bytes());
            match f {
                Some(b) => {
                    s.extend((b.len() as i32).to_be_bytes());
                    s.extend(*b);
                }
                None => s.extend((-1i32).to_be_bytes()),
            }
        }
        s.extend((-1i16).to_be_bytes());
        s
    }

    #[test]
    fn binary_copy_streams_give_their_fields_in_order() {
        let mut out = vec![];
        let n = copy_binary_fields(&stream(&[Some(b"a\n"), Some(b""), Some(b"bc\n")])[..], &mut out).unwrap();
        assert_eq!((n, out.as_slice()), (3, &b"a\nbc\n"[..]));
        let mut out = vec![];
        assert!(copy_binary_fields(&stream(&[None])[..], &mut out).is_err());
        assert!(copy_binary_fields(&b"PGCOPY"[..], &mut out).is_err());
        let mut cut = stream(&[Some(b"abc")]);
        cut.truncate(cut.len() - 4);
        assert!(copy_binary_fields(&cut[..], &mut out).is_err());
    }
}
