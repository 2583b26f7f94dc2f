//! The session index on the server (migration 4): the index arbor-tree's
//! load reads ([`arbor_tree::storage::stored_index`]), kept in `arbor.index_parts`
//! and `arbor.index_ids` and maintained by every write in the write's own
//! transaction, so that a first open on a machine reads the entries a
//! command needs instead of the whole session, as a reopen through the
//! cache's index does.
//!
//! A part is kept in chunks of [`CHUNK`] bytes (4 KiB) at aligned offsets, so an
//! append knows where the last chunk starts and how full it is from the
//! index's extent alone: it fills that chunk and adds new ones, two
//! statements whatever the append. A session whose lines an index cannot
//! hold ([`arbor_tree::storage::stored_index::Unindexable`]) keeps no index (its
//! `ix_entries` -1, the other `ix_*` columns NULL) until it is replaced
//! whole; it reads as it did before, by ranges. A session written before
//! migration 4 (every `ix_*` column NULL) gets its index built by the
//! first writer that opens it ([`build_missing`]).

use std::collections::HashMap;
use std::io;
use std::sync::Arc;

use arbor_log::scan::ReadAt;
use postgres::types::Type;
use postgres::GenericClient;

use arbor_tree::storage::stored_index::{scan, Extent, IdRow, IndexSource, Part, StoredIndex};

use crate::conns::Conns;
use crate::error::SqlError;
use crate::key::SessionKey;
use crate::reader::ServerFile;
use crate::rows::{SessionRow, COLUMNS};

/// The size of a part's chunks. Small, because an append rewrites the
/// last chunk of each part it fills (with 64 KiB chunks, durable appends
/// ran at a fifth of their rate: the rewritten rows' WAL), and a 64 KiB
/// block the reader fetches is 16 rows of one statement.
pub(crate) const CHUNK: u64 = 4 << 10;
/// Lines scanned and added per step of a large write (what a step holds).
const STEP: usize = 8192;
/// The extent's columns, in [`extent_at`]'s order.
const EXTENT: &str = "ix_entries, ix_strings, ix_header, ix_lines, ix_bytes";

/// The extent whose columns start at `at` (`None`: not indexed).
fn extent_at(r: &postgres::Row, at: usize) -> Option<Extent> {
    let col = |k: usize| r.get::<_, Option<i64>>(at + k).and_then(|v| u64::try_from(v).ok());
    Some(Extent { entries: col(0)?, strings: col(1)?, header_bytes: col(2)?, lines: col(3)?, bytes: col(4)? })
}

/// The row of `key` and its index's extent, when the index covers exactly
/// the session's lines (`None` otherwise: the session is read by ranges).
pub(crate) fn find(
    c: &mut impl GenericClient,
    key: &SessionKey,
) -> Result<Option<(SessionRow, Option<Extent>)>, SqlError> {
    let sql = format!("SELECT {COLUMNS}, {EXTENT} FROM arbor.sessions WHERE dir = $1 AND name = $2");
    let Some(r) = c.query_typed_opt(&sql, &[(&key.dir, Type::TEXT), (&key.name, Type::TEXT)])? else {
        return Ok(None);
    };
    let row = SessionRow::from_row(&r, 0);
    let extent = extent_at(&r, COLUMNS.split(',').count()).filter(|e| {
        i64::try_from(e.bytes).is_ok_and(|b| b == row.byte_size)
            && i64::try_from(e.lines).is_ok_and(|l| l == row.line_count)
    });
    Ok(Some((row, extent)))
}

/// Sets the index of session `id`: its extent, or none.
fn set_extent(c: &mut impl GenericClient, id: i64, e: Option<Extent>) -> Result<(), SqlError> {
    let v = |f: fn(&Extent) -> u64| e.as_ref().map(|e| i64::try_from(f(e)).unwrap_or(i64::MAX));
    let cols = [v(|e| e.entries), v(|e| e.strings), v(|e| e.header_bytes), v(|e| e.lines), v(|e| e.bytes)];
    c.execute_typed(
        "UPDATE arbor.sessions SET ix_entries = $2, ix_strings = $3, ix_header = $4, ix_lines = $5, ix_bytes = $6 \
         WHERE id = $1",
        &[
            (&id, Type::INT8),
            (&cols[0], Type::INT8),
            (&cols[1], Type::INT8),
            (&cols[2], Type::INT8),
            (&cols[3], Type::INT8),
            (&cols[4], Type::INT8),
        ],
    )?;
    Ok(())
}

/// Drops the index rows of session `id`.
fn clear(c: &mut impl GenericClient, id: i64) -> Result<(), SqlError> {
    c.execute_typed("DELETE FROM arbor.index_parts WHERE session = $1", &[(&id, Type::INT8)])?;
    c.execute_typed("DELETE FROM arbor.index_ids WHERE session = $1", &[(&id, Type::INT8)])?;
    Ok(())
}

/// Session `id` keeps no index (until it is replaced whole: [`restart`]):
/// `ix_entries` -1 says that one was given up, where NULL says that none
/// was ever built ([`build_missing`]).
pub(crate) fn forget(c: &mut impl GenericClient, id: i64) -> Result<(), SqlError> {
    clear(c, id)?;
    set_extent(c, id, None)?;
    c.execute_typed("UPDATE arbor.sessions SET ix_entries = -1 WHERE id = $1", &[(&id, Type::INT8)])?;
    Ok(())
}

/// Builds the index of session `id` when it has none because it was
/// written before migration 4 (every `ix_*` column NULL), from its lines
/// read [`STEP`] at a time; true when it did. Run by a writer that opens
/// the session, in its transaction under the session's lock: once per such
/// session (one whose lines an index cannot hold is marked so, [`forget`]).
pub(crate) fn build_missing(c: &mut impl GenericClient, id: i64) -> Result<bool, SqlError> {
    let never: bool = c
        .query_typed_one(
            "SELECT ix_entries IS NULL AND ix_bytes IS NULL FROM arbor.sessions WHERE id = $1",
            &[(&id, Type::INT8)],
        )?
        .get(0);
    if !never {
        return Ok(false);
    }
    restart(c, id)?;
    let mut seq = 0i64;
    loop {
        let rows = c.query_typed(
            "SELECT bytes FROM arbor.lines WHERE session = $1 AND seq >= $2 AND seq < $3 ORDER BY seq",
            &[(&id, Type::INT8), (&seq, Type::INT8), (&(seq + STEP as i64), Type::INT8)],
        )?;
        if rows.is_empty() {
            return Ok(true);
        }
        let lines: Vec<&[u8]> = rows.iter().map(|r| r.get::<_, &[u8]>(0)).collect();
        add(c, id, &lines)?;
        seq += rows.len() as i64;
        let indexed: bool = c
            .query_typed_one("SELECT ix_bytes IS NOT NULL FROM arbor.sessions WHERE id = $1", &[(&id, Type::INT8)])?
            .get(0);
        if !indexed {
            return Ok(false);
        }
    }
}

/// Session `id` (emptied, about to be written whole) starts the index of nothing.
pub(crate) fn restart(c: &mut impl GenericClient, id: i64) -> Result<(), SqlError> {
    clear(c, id)?;
    set_extent(c, id, Some(Extent::default()))
}

/// Adds `lines`, just written after the lines the index covers, to the
/// index of session `id`; a line an index cannot hold ends the index. Does
/// nothing for a session that keeps none.
pub(crate) fn add(c: &mut impl GenericClient, id: i64, lines: &[&[u8]]) -> Result<(), SqlError> {
    let row = c.query_typed_one(&format!("SELECT {EXTENT} FROM arbor.sessions WHERE id = $1"), &[(&id, Type::INT8)])?;
    let Some(mut at) = extent_at(&row, 0) else { return Ok(()) };
    for step in lines.chunks(STEP) {
        match add_step(c, id, at, step)? {
            Some(next) => at = next,
            None => return forget(c, id),
        }
    }
    set_extent(c, id, Some(at))
}

/// Adds one step's lines; the new extent, or `None` when they cannot be indexed.
fn add_step(c: &mut impl GenericClient, id: i64, at: Extent, lines: &[&[u8]]) -> Result<Option<Extent>, SqlError> {
    let Ok(scanned) = scan(at, lines) else { return Ok(None) };
    let asked: Vec<&[u8]> = scanned.lookups().iter().map(|s| s.as_bytes()).collect();
    let mut known: HashMap<Vec<u8>, Vec<IdRow>> = HashMap::new();
    if !asked.is_empty() {
        let rows = c.query_typed(
            "SELECT entry_id, position, names_parent FROM arbor.index_ids WHERE session = $1 AND entry_id = ANY($2)",
            &[(&id, Type::INT8), (&asked, Type::BYTEA_ARRAY)],
        )?;
        for r in rows {
            let (key, position, names_parent): (Vec<u8>, i32, bool) = (r.get(0), r.get(1), r.get(2));
            let Ok(position) = u32::try_from(position) else { continue };
            known.entry(key).or_default().push(IdRow { position, names_parent });
        }
    }
    let Ok(add) = scanned.finish(&|id: &str| known.get(id.as_bytes()).cloned().unwrap_or_default()) else {
        return Ok(None);
    };
    write_parts(c, id, at, &add.parts)?;
    if !add.ids.is_empty() {
        let keys: Vec<&[u8]> = add.ids.iter().map(|(k, _)| k.as_bytes()).collect();
        let positions: Vec<i32> = add.ids.iter().map(|(_, r)| i32::try_from(r.position).unwrap_or(i32::MAX)).collect();
        let parents: Vec<bool> = add.ids.iter().map(|(_, r)| r.names_parent).collect();
        c.execute_typed(
            "INSERT INTO arbor.index_ids (session, entry_id, position, names_parent) \
             SELECT $1, t.k, t.p, t.n FROM unnest($2::bytea[], $3::int4[], $4::bool[]) AS t(k, p, n)",
            &[
                (&id, Type::INT8),
                (&keys, Type::BYTEA_ARRAY),
                (&positions, Type::INT4_ARRAY),
                (&parents, Type::BOOL_ARRAY),
            ],
        )?;
    }
    Ok(Some(add.extent))
}

/// Bytes at an offset of a part.
type Piece<'a> = (u64, &'a [u8]);

/// Where `new` bytes go at the end of a part `len` bytes long: the piece
/// that fills its last chunk (its offset and bytes), then whole new chunks.
fn pieces(len: u64, new: &[u8]) -> (Option<Piece<'_>>, Vec<Piece<'_>>) {
    let room = (CHUNK - len % CHUNK) % CHUNK;
    let fill = (room as usize).min(new.len());
    let first = (fill > 0).then(|| (len - len % CHUNK, &new[..fill]));
    let mut at = len + fill as u64;
    let rest = new[fill..]
        .chunks(CHUNK as usize)
        .map(|c| {
            let here = at;
            at += c.len() as u64;
            (here, c)
        })
        .collect();
    (first, rest)
}

/// Pieces as the columns of an `unnest`: parts, offsets, bytes.
type Pieces<'a> = (Vec<i16>, Vec<i64>, Vec<&'a [u8]>);

/// Bytes at an offset of the part with a code.
type Coded<'a> = (i16, i64, &'a [u8]);

fn split<'a>(v: &[Coded<'a>]) -> Pieces<'a> {
    (v.iter().map(|x| x.0).collect(), v.iter().map(|x| x.1).collect(), v.iter().map(|x| x.2).collect())
}

/// Adds `parts` (in [`Part::ALL`]'s order) at the ends of the parts of the index at `at`.
fn write_parts(c: &mut impl GenericClient, id: i64, at: Extent, parts: &[Vec<u8>; 4]) -> Result<(), SqlError> {
    let (mut fills, mut news): (Vec<Coded<'_>>, Vec<Coded<'_>>) = (vec![], vec![]);
    for (part, bytes) in Part::ALL.iter().zip(parts) {
        let code = i16::from(part.code());
        let (fill, rest) = pieces(at.len_of(*part), bytes);
        let off = |o: u64| i64::try_from(o).unwrap_or(i64::MAX);
        fills.extend(fill.map(|(o, b)| (code, off(o), b)));
        news.extend(rest.into_iter().map(|(o, b)| (code, off(o), b)));
    }
    if !fills.is_empty() {
        let (p, o, b) = split(&fills);
        c.execute_typed(
            "UPDATE arbor.index_parts x SET bytes = x.bytes || t.b \
             FROM unnest($2::int2[], $3::int8[], $4::bytea[]) AS t(p, o, b) \
             WHERE x.session = $1 AND x.part = t.p AND x.off = t.o",
            &[(&id, Type::INT8), (&p, Type::INT2_ARRAY), (&o, Type::INT8_ARRAY), (&b, Type::BYTEA_ARRAY)],
        )?;
    }
    if !news.is_empty() {
        let (p, o, b) = split(&news);
        c.execute_typed(
            "INSERT INTO arbor.index_parts (session, part, off, bytes) \
             SELECT $1, t.p, t.o, t.b FROM unnest($2::int2[], $3::int8[], $4::bytea[]) AS t(p, o, b)",
            &[(&id, Type::INT8), (&p, Type::INT2_ARRAY), (&o, Type::INT8_ARRAY), (&b, Type::BYTEA_ARRAY)],
        )?;
    }
    Ok(())
}

const _: () = assert!(CHUNK == crate::reader::PART_CHUNK, "reader.rs reads parts in CHUNKs");

/// The index of one version of a session, read from the server a block at
/// a time (the blocks kept as the session's own are, [`ServerFile`]).
#[derive(Debug)]
pub(crate) struct ServerIndex {
    conns: Arc<Conns>,
    id: i64,
    generation: i64,
    parts: [Box<dyn ReadAt>; 4],
}

impl ServerIndex {
    /// The index of session `row`, reaching as far as `extent`, each part
    /// read through `through` (the store's local copy, when it keeps one).
    pub(crate) fn open(
        conns: &Arc<Conns>,
        row: &SessionRow,
        extent: Extent,
        through: impl Fn(ServerFile, Part) -> Box<dyn ReadAt>,
    ) -> StoredIndex {
        let parts =
            Part::ALL.map(|p| through(ServerFile::part(conns.clone(), row, i16::from(p.code()), extent.len_of(p)), p));
        let me = ServerIndex { conns: conns.clone(), id: row.id, generation: row.generation, parts };
        StoredIndex::new(Arc::new(me), extent)
    }
}

impl IndexSource for ServerIndex {
    fn read_part(&self, part: Part, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.parts[usize::from(part.code())].read_at(buf, offset)
    }

    fn id_rows(&self, id: &str) -> io::Result<Vec<IdRow>> {
        let (session, generation, id) = (self.id, self.generation, id.to_owned());
        let rows = self
            .conns
            .read_bounded(move |c| {
                Ok(c.query_typed(
                    "SELECT i.position, i.names_parent FROM arbor.index_ids i \
                     JOIN arbor.sessions s ON s.id = i.session AND s.generation = $2 \
                     WHERE i.session = $1 AND i.entry_id = $3",
                    &[(&session, Type::INT8), (&generation, Type::INT8), (&id.as_bytes(), Type::BYTEA)],
                )?)
            })
            .map_err(io::Error::other)?;
        Ok(rows
            .iter()
            .filter_map(|r| Some(IdRow { position: u32::try_from(r.get::<_, i32>(0)).ok()?, names_parent: r.get(1) }))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn new_bytes_fill_the_last_chunk_then_start_aligned_ones() {
        let new = vec![7u8; 3 * CHUNK as usize];
        let (fill, rest) = pieces(10, &new);
        assert_eq!(fill.map(|(o, b)| (o, b.len())), Some((0, CHUNK as usize - 10)));
        assert_eq!(
            rest.iter().map(|(o, b)| (*o, b.len())).collect::<Vec<_>>(),
            [(CHUNK, CHUNK as usize), (2 * CHUNK, CHUNK as usize), (3 * CHUNK, 10)]
        );
        let (fill, rest) = pieces(CHUNK, &new[..5]);
        assert!(fill.is_none());
        assert_eq!(rest.iter().map(|(o, b)| (*o, b.len())).collect::<Vec<_>>(), [(CHUNK, 5)]);
        let (fill, rest) = pieces(0, &[]);
        assert!(fill.is_none() && rest.is_empty());
        let (fill, rest) = pieces(CHUNK + 1, &new[..3]);
        assert_eq!(fill.map(|(o, b)| (o, b.len())), Some((CHUNK, 3)));
        assert!(rest.is_empty());
    }
}
