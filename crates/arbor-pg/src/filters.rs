//! The gram filters of the sessions on the server (migration 5,
//! `arbor.filters`): the filters the local catalog keeps
//! ([`arbor_search::grams`]), so that a search on the server reads only the
//! ranges of a session that may hold its words, as a search of files does.
//!
//! Every write adds the filters of the bytes it writes, in its own
//! transaction ([`after_append`], [`after_replace`], [`copy`]; a repaired
//! tail drops those that reach into it, [`drop_from`]): one per MiB or so of
//! whole lines ([`arbor_search::COLUMN_BYTES`]). An append whose new lines, with those
//! written since the last filter, are fewer than [`BUILD_MIN`] bytes leaves
//! them without one (a search reads them as they are); a session with no
//! filter yet (written before migration 5, or by a build whose filter format
//! differs) gets them for its bytes too, up to [`PENDING_MAX`] of them read
//! back; beyond that the first search that reads it builds them
//! ([`keep`], when its role may insert).
//!
//! A filter is checked on the server ([`of_scope`]): the query's needs
//! become an SQL expression over the filter's bits, so a search fetches a
//! yes or no per filter, not the filters. Each filter carries its session's
//! generation and the [`format`] of the build that made it; a filter of
//! another generation or format is not read, so that a changed hash never
//! hides a hit.

use std::collections::HashMap;
use std::sync::OnceLock;

use postgres::types::{ToSql, Type};
use postgres::GenericClient;

use std::io;

use arbor_log::scan::ReadAt;
use arbor_search::grams::{self, Builder, Filter, Need};
use arbor_search::{scan_ranges, Mode, Pattern, Range};

use crate::error::SqlError;
use crate::rows::{read_range, SessionRow};

/// New lines of a session that has filters get one once they (with those
/// written since its last filter) reach this many bytes: the local catalog's rule.
pub(crate) const BUILD_MIN: u64 = 64 << 10;
/// The most bytes without a filter an append reads back from the server to
/// give them one; a session with more (written before migration 5) gets
/// them from the first search that reads it.
pub(crate) const PENDING_MAX: u64 = 4 << 20;

/// A filter built, for bytes `[start, end)` of a session.
#[derive(Debug, Clone)]
pub(crate) struct Built {
    pub start: u64,
    pub end: u64,
    pub filter: Filter,
}

/// The filter format of this build: [`grams::FORMAT`] and a fingerprint of
/// the filters it makes (so a changed hash is a new format even if the
/// constant were not changed); `None` when the filters do not keep the
/// layout the server reads them with ([`check_layout`]): then no filter is
/// made or read on the server.
pub(crate) fn format() -> Option<i64> {
    static FORMAT: OnceLock<Option<i64>> = OnceLock::new();
    *FORMAT.get_or_init(|| {
        let probe = probe_filter();
        if !check_layout(&probe) {
            return None;
        }
        // FNV-1a over what makes a filter.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |bytes: &[u8]| {
            for &b in bytes {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        };
        eat(&grams::FORMAT.to_le_bytes());
        eat(&[grams::MIN_LOG, grams::MAX_LOG, probe.log]);
        for len in [0u64, 1 << 10, 1 << 16, 1 << 20, 1 << 30] {
            eat(&[grams::log_for(len)]);
        }
        for w in &probe.words {
            eat(&w.to_le_bytes());
        }
        Some(i64::from_le_bytes(h.to_le_bytes()) & i64::MAX)
    })
}

/// The filter of a fixed text of several scripts.
fn probe_filter() -> Filter {
    let text = "{\"type\":\"message\",\"content\":\"Back up openclaw-backup.git 百度云自动备份 Привет 😀 x86_64\"}\n";
    let mut b = Builder::new(text.len() as u64);
    b.add(text.as_bytes());
    b.finish()
}

/// True when a filter's bit for a gram is bit [`grams::bucket`] of its
/// words laid out little-endian, the bit the server's `get_bit` reads.
fn check_layout(f: &Filter) -> bool {
    let bytes = bits_of(f);
    (0..4096u32).map(|i| i.wrapping_mul(0x9E37_79B1) & 0x00FF_FFFF).all(|g| {
        let b = grams::bucket(g, f.log);
        let bit = bytes.get(b / 8).is_some_and(|byte| byte >> (b % 8) & 1 == 1);
        bit == f.has(g)
    })
}

/// A filter's words as the bytes kept on the server.
fn bits_of(f: &Filter) -> Vec<u8> {
    f.words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Bytes standing in for a session file, for [`scan_ranges`].
#[derive(Debug)]
struct Bytes<'a>(&'a [u8]);

impl ReadAt for Bytes<'_> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(self.0.len());
        let n = buf.len().min(self.0.len() - start);
        buf[..n].copy_from_slice(&self.0[start..start + n]);
        Ok(n)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.0.len() as u64)
    }
}

/// A query no entry is asked for: scanning with it (and no hit wanted)
/// builds a range's filters exactly as a search of files does, lines with
/// odd escapes given the grams of their decoded text.
fn builder_pattern() -> Option<&'static Pattern> {
    static NEVER: OnceLock<Option<Pattern>> = OnceLock::new();
    NEVER
        .get_or_init(|| {
            let query = arbor_search::parse_query("re:\\x00arbor-filter-build\\x00").ok()?;
            Pattern::new(&query).ok().flatten()
        })
        .as_ref()
}

/// The filters of `bytes`, which start at byte `at` of their session: one
/// per [`arbor_search::COLUMN_BYTES`] or so of whole lines, built by arbor-search's scan.
/// A last line without its newline gets none (it may yet grow).
pub(crate) fn build(at: u64, bytes: &[u8]) -> Vec<Built> {
    let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let Some(pattern) = builder_pattern() else { return vec![] };
    if whole == 0 {
        return vec![];
    }
    let range = Range { start: 0, end: whole as u64, build: true };
    let Ok(scanned) = scan_ranges(&Bytes(&bytes[..whole]), &[range], &pattern.in_session(""), Mode::Exact, 0) else {
        return vec![];
    };
    scanned.filters.into_iter().map(|(r, filter)| Built { start: at + r.start, end: at + r.end, filter }).collect()
}

/// The filters of `lines`, which start at byte `at` (see [`build`]).
pub(crate) fn build_lines(at: u64, lines: &[&[u8]]) -> Vec<Built> {
    build(at, &lines.concat())
}

/// Adds `built` to session `id` at `generation`, in the caller's
/// transaction (a write's: the bytes are its own).
fn insert(c: &mut impl GenericClient, id: i64, generation: i64, fmt: i64, built: &[Built]) -> Result<(), SqlError> {
    if built.is_empty() {
        return Ok(());
    }
    let (starts, ends, logs, bits) = columns(built);
    c.execute_typed(
        "INSERT INTO arbor.filters (session, generation, start_off, end_off, format, log, bits) \
         SELECT $1, $2, t.s, t.e, $3, t.l, t.b FROM unnest($4::int8[], $5::int8[], $6::int2[], $7::bytea[]) AS t(s, e, l, b) \
         ON CONFLICT DO NOTHING",
        &params(&id, &generation, &fmt, &starts, &ends, &logs, &bits),
    )?;
    Ok(())
}

type Columns = (Vec<i64>, Vec<i64>, Vec<i16>, Vec<Vec<u8>>);

fn columns(built: &[Built]) -> Columns {
    let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    (
        built.iter().map(|b| n(b.start)).collect(),
        built.iter().map(|b| n(b.end)).collect(),
        built.iter().map(|b| i16::from(b.filter.log)).collect(),
        built.iter().map(|b| bits_of(&b.filter)).collect(),
    )
}

#[allow(clippy::too_many_arguments)]
fn params<'a>(
    id: &'a i64,
    generation: &'a i64,
    fmt: &'a i64,
    starts: &'a Vec<i64>,
    ends: &'a Vec<i64>,
    logs: &'a Vec<i16>,
    bits: &'a Vec<Vec<u8>>,
) -> [(&'a (dyn ToSql + Sync), Type); 7] {
    [
        (id, Type::INT8),
        (generation, Type::INT8),
        (fmt, Type::INT8),
        (starts, Type::INT8_ARRAY),
        (ends, Type::INT8_ARRAY),
        (logs, Type::INT2_ARRAY),
        (bits, Type::BYTEA_ARRAY),
    ]
}

/// Session `id` was just written whole as `lines` at `generation`: its
/// filters are those of its lines.
pub(crate) fn after_replace(
    c: &mut impl GenericClient,
    id: i64,
    generation: i64,
    lines: &[&[u8]],
) -> Result<(), SqlError> {
    c.execute_typed("DELETE FROM arbor.filters WHERE session = $1", &[(&id, Type::INT8)])?;
    let Some(fmt) = format() else { return Ok(()) };
    insert(c, id, generation, fmt, &build_lines(0, lines))
}

/// `new` was just appended to session `row` (as it was before): filters
/// for the lines without one, when they are many enough (see the module docs).
pub(crate) fn after_append(c: &mut impl GenericClient, row: &SessionRow, new: &[&[u8]]) -> Result<(), SqlError> {
    let Some(fmt) = format() else { return Ok(()) };
    let (id, generation) = (row.id, row.generation);
    let r = c.query_typed_one(
        "SELECT coalesce(max(end_off), 0), count(*) FROM arbor.filters \
         WHERE session = $1 AND generation = $2 AND format = $3",
        &[(&id, Type::INT8), (&generation, Type::INT8), (&fmt, Type::INT8)],
    )?;
    let (covered, count): (i64, i64) = (r.get(0), r.get(1));
    let size = row.byte_size;
    let pending = u64::try_from(size - covered).unwrap_or_default();
    let added: u64 = new.iter().map(|l| l.len() as u64).sum();
    if count == 0 {
        // Filters of another generation or format are never read again.
        c.execute_typed(
            "DELETE FROM arbor.filters WHERE session = $1 AND (generation <> $2 OR format <> $3)",
            &[(&id, Type::INT8), (&generation, Type::INT8), (&fmt, Type::INT8)],
        )?;
    } else if pending + added < BUILD_MIN {
        return Ok(());
    }
    let built = if pending > PENDING_MAX || covered > size {
        build_lines(u64::try_from(size).unwrap_or_default(), new)
    } else {
        let mut bytes = if pending == 0 { vec![] } else { read_range(c, id, generation, covered, size)? };
        if (bytes.len() as u64) < pending || !(bytes.is_empty() || bytes.ends_with(b"\n")) {
            // Not the bytes expected, or a torn line before the new ones: left to searches.
            return Ok(());
        }
        new.iter().for_each(|l| bytes.extend_from_slice(l));
        build(u64::try_from(covered).unwrap_or_default(), &bytes)
    };
    insert(c, id, generation, fmt, &built)
}

/// Session `id`'s bytes from `off` on are being changed (its torn last
/// line given a newline or moved aside): the filters reaching into them go.
pub(crate) fn drop_from(c: &mut impl GenericClient, id: i64, off: i64) -> Result<(), SqlError> {
    c.execute_typed(
        "DELETE FROM arbor.filters WHERE session = $1 AND end_off > $2",
        &[(&id, Type::INT8), (&off, Type::INT8)],
    )?;
    Ok(())
}

/// Session `to` (new, generation 1) was just made a copy of `from`'s lines: it gets its filters too.
pub(crate) fn copy(c: &mut impl GenericClient, from: &SessionRow, to: i64) -> Result<(), SqlError> {
    c.execute_typed(
        "INSERT INTO arbor.filters (session, generation, start_off, end_off, format, log, bits) \
         SELECT $1, s.generation, f.start_off, f.end_off, f.format, f.log, f.bits \
           FROM arbor.filters f JOIN arbor.sessions s ON s.id = $1 \
          WHERE f.session = $2 AND f.generation = $3 AND f.end_off <= $4",
        &[(&to, Type::INT8), (&from.id, Type::INT8), (&from.generation, Type::INT8), (&from.byte_size, Type::INT8)],
    )?;
    Ok(())
}

/// A filter of a session as a search sees it: its range, and whether it
/// may hold what the search needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stored {
    pub start: u64,
    pub end: u64,
    pub may: bool,
}

/// The filters of the sessions of directory `dir` (every directory with
/// `None`) that this build can read, by session id, each with whether it
/// may hold `need` (checked on the server).
pub(crate) fn of_scope(
    c: &mut impl GenericClient,
    dir: Option<&str>,
    need: &Need,
) -> Result<HashMap<i64, Vec<Stored>>, SqlError> {
    let Some(fmt) = format() else { return Ok(HashMap::new()) };
    let grams = need.grams();
    let width = usize::from(grams::MAX_LOG - grams::MIN_LOG) + 1;
    let buckets: Vec<i32> = grams
        .iter()
        .flat_map(|&g| {
            (grams::MIN_LOG..=grams::MAX_LOG).map(move |log| i32::try_from(grams::bucket(g, log)).unwrap_or(i32::MAX))
        })
        .collect();
    let expr = need_sql(need, &grams, width);
    let (min, max) = (grams::MIN_LOG, grams::MAX_LOG);
    let sql = format!(
        "SELECT f.session, f.start_off, f.end_off, {expr} \
           FROM arbor.filters f JOIN arbor.sessions s ON s.id = f.session AND s.generation = f.generation \
          WHERE s.kind = 1 AND s.name LIKE '%.jsonl' AND ($1::text IS NULL OR s.dir = $1) AND f.format = $2 \
            AND f.log BETWEEN {min} AND {max} AND length(f.bits)::int8 * 8 = (1::int8 << f.log) \
            AND f.start_off >= 0 AND f.start_off < f.end_off AND f.end_off <= s.byte_size"
    );
    let rows = c.query_typed(&sql, &[(&dir, Type::TEXT), (&fmt, Type::INT8), (&buckets, Type::INT4_ARRAY)])?;
    let mut out: HashMap<i64, Vec<Stored>> = HashMap::new();
    for r in rows {
        let n = |k: usize| u64::try_from(r.get::<_, i64>(k)).unwrap_or_default();
        out.entry(r.get(0)).or_default().push(Stored { start: n(1), end: n(2), may: r.get(3) });
    }
    for v in out.values_mut() {
        v.sort_by_key(|s| (s.start, s.end));
    }
    Ok(out)
}

/// `need` as an SQL boolean over the filter `f` (`$3` holds each gram's
/// bucket for each size, `width` of them a gram, in `grams`' order).
fn need_sql(need: &Need, grams: &[u32], width: usize) -> String {
    match need {
        Need::Anything => "true".to_owned(),
        Need::Gram(g) => {
            let k = grams.iter().position(|x| x == g).unwrap_or_default();
            // PostgreSQL's arrays count from 1; the sizes from MIN_LOG.
            let base = (k * width) as i64 + 1 - i64::from(grams::MIN_LOG);
            format!("get_bit(f.bits, $3[{base} + f.log]) = 1")
        }
        Need::All(v) | Need::Any(v) if v.is_empty() => "true".to_owned(),
        Need::All(v) => format!("({})", v.iter().map(|n| need_sql(n, grams, width)).collect::<Vec<_>>().join(" AND ")),
        Need::Any(v) => format!("({})", v.iter().map(|n| need_sql(n, grams, width)).collect::<Vec<_>>().join(" OR ")),
    }
}

/// True when this connection may add filters (a role with `INSERT` on
/// them, on a server that takes writes).
pub(crate) fn may_insert(c: &mut impl GenericClient) -> Result<bool, SqlError> {
    let r = c.query_typed_one(
        "SELECT has_table_privilege('arbor.filters', 'INSERT') AND NOT pg_is_in_recovery() \
                AND current_setting('transaction_read_only') = 'off'",
        &[],
    )?;
    Ok(r.get(0))
}

/// Keeps the filters a search built of session `id` at `generation` (each
/// for the whole lines of its range), unless the session was replaced since.
pub(crate) fn keep(
    c: &mut impl GenericClient,
    id: i64,
    generation: i64,
    built: &[(Range, Filter)],
) -> Result<(), SqlError> {
    let Some(fmt) = format() else { return Ok(()) };
    let built: Vec<Built> =
        built.iter().map(|(r, f)| Built { start: r.start, end: r.end, filter: f.clone() }).collect();
    if built.is_empty() {
        return Ok(());
    }
    let (starts, ends, logs, bits) = columns(&built);
    c.execute_typed(
        "INSERT INTO arbor.filters (session, generation, start_off, end_off, format, log, bits) \
         SELECT $1, $2, t.s, t.e, $3, t.l, t.b FROM unnest($4::int8[], $5::int8[], $6::int2[], $7::bytea[]) AS t(s, e, l, b) \
          WHERE EXISTS (SELECT 1 FROM arbor.sessions WHERE id = $1 AND generation = $2 AND byte_size >= t.e) \
         ON CONFLICT DO NOTHING",
        &params(&id, &generation, &fmt, &starts, &ends, &logs, &bits),
    )?;
    Ok(())
}

/// The ranges of a session of `size` bytes a search reads, given its
/// filters (sorted by start): all but those whose filter rules the query
/// out. Bytes no filter covers are built when `build` allows: when the
/// session has none, or they are [`BUILD_MIN`] or more.
pub(crate) fn plan(size: u64, stored: &[Stored], build: bool) -> Vec<Range> {
    let skip = union(stored.iter().filter(|s| !s.may && s.end <= size));
    let covered = union(stored.iter().filter(|s| s.end <= size));
    let none = covered.is_empty();
    let mut out: Vec<Range> = vec![];
    for (s, e) in minus(&[(0, size)], &skip) {
        // Within what is read: the covered parts as they are, the rest perhaps built.
        let mut at = s;
        for &(cs, ce) in covered.iter().filter(|&&(cs, ce)| ce > s && cs < e) {
            let (cs, ce) = (cs.max(s), ce.min(e));
            if cs > at {
                push(&mut out, Range { start: at, end: cs, build: build && (none || cs - at >= BUILD_MIN) });
            }
            push(&mut out, Range { start: cs, end: ce, build: false });
            at = ce;
        }
        if e > at {
            push(&mut out, Range { start: at, end: e, build: build && (none || e - at >= BUILD_MIN) });
        }
    }
    out
}

/// Appends a range, joined to the one before when they touch and neither builds.
fn push(ranges: &mut Vec<Range>, r: Range) {
    if let Some(last) = ranges.last_mut() {
        if last.end == r.start && !last.build && !r.build {
            last.end = r.end;
            return;
        }
    }
    ranges.push(r);
}

/// The union of ranges sorted by start, as disjoint sorted pairs.
fn union<'a>(ranges: impl Iterator<Item = &'a Stored>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = vec![];
    for s in ranges {
        match out.last_mut() {
            Some(last) if s.start <= last.1 => last.1 = last.1.max(s.end),
            _ => out.push((s.start, s.end)),
        }
    }
    out
}

/// `from` (disjoint, sorted) without `cut` (disjoint, sorted).
fn minus(from: &[(u64, u64)], cut: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = vec![];
    for &(s, e) in from {
        let mut at = s;
        for &(cs, ce) in cut.iter().filter(|&&(cs, ce)| ce > s && cs < e) {
            if cs > at {
                out.push((at, cs));
            }
            at = at.max(ce);
        }
        if e > at {
            out.push((at, e));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use arbor_search::COLUMN_BYTES;

    #[test]
    fn the_server_reads_the_bits_the_filter_has() {
        assert!(check_layout(&probe_filter()));
        assert!(format().is_some());
    }

    #[test]
    fn filters_cover_whole_lines_and_leave_a_torn_one() {
        let text = "{\"a\":1}\n".repeat(200_000);
        let built = build(100, text.as_bytes());
        assert!(built.len() >= 2);
        assert_eq!(built[0].start, 100);
        assert!(built.windows(2).all(|w| w[0].end == w[1].start));
        assert_eq!(built.last().unwrap().end, 100 + text.len() as u64);
        assert!((built[0].end - built[0].start) >= COLUMN_BYTES && (built[0].end - 100).is_multiple_of(8));
        let built = build(0, b"{\"a\":1}\n{\"b\":");
        assert_eq!((built.len(), built[0].end), (1, 8));
    }

    #[test]
    fn a_line_with_odd_escapes_gets_the_grams_of_its_text() {
        // Written as Python writes JSON: every non-ASCII character and the slash escaped.
        let line = br#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"caf\u00e9 github.com\/openclaw"}}"#;
        let mut bytes = line.to_vec();
        bytes.push(b'\n');
        let built = build(0, &bytes);
        for q in ["café", "m/op", "github.com/openclaw"] {
            let need = Pattern::new(&arbor_search::parse_query(q).unwrap()).unwrap().unwrap().need();
            assert!(need.eval(&|g| built[0].filter.has(g)), "{q}");
        }
    }

    fn st(start: u64, end: u64, may: bool) -> Stored {
        Stored { start, end, may }
    }

    fn r(start: u64, end: u64, build: bool) -> Range {
        Range { start, end, build }
    }

    #[test]
    fn plans_skip_ruled_out_filters_and_build_what_none_covers() {
        // No filter: the whole session, built.
        assert_eq!(plan(100, &[], true), [r(0, 100, true)]);
        assert_eq!(plan(100, &[], false), [r(0, 100, false)]);
        // A filter that rules the query out, and a short tail: the tail only, not built.
        assert_eq!(plan(100, &[st(0, 90, false)], true), [r(90, 100, false)]);
        // A filter that may hold it: read with the tail.
        assert_eq!(plan(100, &[st(0, 90, true)], true), [r(0, 100, false)]);
        // A long gap between filters is built; a filter beyond the size is not read.
        let big = BUILD_MIN * 2;
        let stored = [st(0, 10, false), st(10 + big, 20 + big, true), st(20 + big, 30 + big, false)];
        assert_eq!(plan(20 + big, &stored, true), [r(10, 10 + big, true), r(10 + big, 20 + big, false)]);
        // Overlapping filters: what any rules out is skipped.
        assert_eq!(plan(50, &[st(0, 30, true), st(20, 50, false)], true), [r(0, 20, false)]);
    }
}
