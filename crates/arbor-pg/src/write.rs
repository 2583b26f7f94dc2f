//! The writes, each run inside one transaction by the caller: a session
//! replaced whole, lines appended after the ones this writer saw, a copy
//! under a side name, the tail made to end cleanly. Each ends by updating the
//! session's row (sizes, listing facts, time) and notifying its followers
//! (`arbor_session_<id>`, delivered at commit).

use postgres::types::Type;
use postgres::GenericClient;

use arbor_log::reader::{parse_line, Parsed};
use arbor_log::writer::TailRepair;
use arbor_tree::listing::ListingFacts;

use crate::error::SqlError;
use crate::key::SessionKey;
use crate::lines::{self, split_lines};
use crate::rows::{facts_assignments, read_lines, FactsParams, SessionRow, COLUMNS};
use crate::{filters, index};

/// The channel the followers of session `id` listen on.
pub(crate) fn channel(id: i64) -> String {
    format!("arbor_session_{id}")
}

/// Sets the sizes and facts of session `id` (only while it has
/// `expect_lines` lines, when given), stamps the time and notifies its
/// followers. `None` when the session did not have `expect_lines` lines.
fn update(
    c: &mut impl GenericClient,
    id: i64,
    expect_lines: Option<i64>,
    lines: i64,
    bytes: i64,
    facts: &ListingFacts,
) -> Result<Option<SessionRow>, SqlError> {
    let f = FactsParams::new(facts);
    let guard = if expect_lines.is_some() { " AND line_count = $14" } else { "" };
    let sql = format!(
        "UPDATE arbor.sessions SET line_count = $2, byte_size = $3, changed_at = clock_timestamp(), {} \
         WHERE id = $1{guard} \
         RETURNING {COLUMNS}, pg_notify('arbor_session_' || id, generation || ':' || line_count)::text",
        facts_assignments(4)
    );
    let expect = expect_lines.unwrap_or_default();
    let mut params = vec![(&id as _, Type::INT8), (&lines as _, Type::INT8), (&bytes as _, Type::INT8)];
    params.extend(f.params());
    if expect_lines.is_some() {
        params.push((&expect as _, Type::INT8));
    }
    Ok(c.query_typed_opt(&sql, &params)?.map(|r| SessionRow::from_row(&r, 0)))
}

/// The facts of whole lines.
fn facts_of(lines: &[&[u8]]) -> ListingFacts {
    let mut f = ListingFacts::default();
    for l in lines {
        f.feed(l);
    }
    f
}

/// Replaces session `key` with `bytes` (creating it); its generation goes up.
pub(crate) fn replace(c: &mut impl GenericClient, key: &SessionKey, bytes: &[u8]) -> Result<SessionRow, SqlError> {
    let r = c.query_typed_one(
        "INSERT INTO arbor.sessions (dir, name) VALUES ($1, $2) ON CONFLICT (dir, name) \
         DO UPDATE SET generation = arbor.sessions.generation + 1 RETURNING id, generation",
        &[(&key.dir, Type::TEXT), (&key.name, Type::TEXT)],
    )?;
    let (id, generation): (i64, i64) = (r.get(0), r.get(1));
    c.execute_typed("DELETE FROM arbor.lines WHERE session = $1", &[(&id, Type::INT8)])?;
    index::restart(c, id)?;
    let all = split_lines(bytes);
    lines::insert(c, id, 0, 0, &all)?;
    index::add(c, id, &all)?;
    filters::after_replace(c, id, generation, &all)?;
    let row = update(c, id, None, all.len() as i64, bytes.len() as i64, &facts_of(&all))?;
    row.ok_or_else(|| missing_row(id))
}

/// The error of a row that vanished inside its own transaction (never expected).
fn missing_row(id: i64) -> SqlError {
    SqlError::Invariant(format!("the row of session {id} vanished during the write"))
}

/// A new write token: 128 random bits, as text.
pub(crate) fn token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The line count the append with `token` left, when it was committed.
pub(crate) fn find_token(c: &mut impl GenericClient, token: &str) -> Result<Option<i64>, postgres::Error> {
    let row = c.query_typed_opt("SELECT line_count FROM arbor.writes WHERE token = $1", &[(&token, Type::TEXT)])?;
    Ok(row.map(|r| r.get(0)))
}

/// Appends `new` after the lines of `row` as this writer last saw it, under
/// the write token `token` (kept with the append, see migration 2). `None`
/// when the session changed on the server since (nothing is written then).
pub(crate) fn append(
    c: &mut impl GenericClient,
    row: &SessionRow,
    new: &[&[u8]],
    token: &str,
) -> Result<Option<SessionRow>, SqlError> {
    let mut facts = row.facts.clone();
    for l in new {
        facts.feed(l);
    }
    let bytes: i64 = new.iter().map(|l| l.len() as i64).sum();
    let lines = row.line_count + new.len() as i64;
    let Some(updated) = update(c, row.id, Some(row.line_count), lines, row.byte_size + bytes, &facts)? else {
        return Ok(None);
    };
    lines::insert(c, row.id, row.line_count, row.byte_size, new)?;
    index::add(c, row.id, new)?;
    filters::after_append(c, row, new)?;
    c.execute_typed(
        "INSERT INTO arbor.writes (token, session, line_count) VALUES ($1, $2, $3)",
        &[(&token, Type::TEXT), (&row.id, Type::INT8), (&lines, Type::INT8)],
    )?;
    c.execute_typed(
        "DELETE FROM arbor.writes WHERE session = $1 AND written_at < clock_timestamp() - interval '1 day'",
        &[(&row.id, Type::INT8)],
    )?;
    Ok(Some(updated))
}

/// Creates an empty session `key` unless it exists; its row.
pub(crate) fn ensure(c: &mut impl GenericClient, key: &SessionKey) -> Result<SessionRow, SqlError> {
    c.execute_typed(
        "INSERT INTO arbor.sessions (dir, name) VALUES ($1, $2) ON CONFLICT (dir, name) DO NOTHING",
        &[(&key.dir, Type::TEXT), (&key.name, Type::TEXT)],
    )?;
    SessionRow::find(c, key)?.ok_or_else(|| missing_row(0))
}

/// A free side name beside `key`: `FILE.<what>-<ms>` (a counter added if taken), created empty.
fn side_session(c: &mut impl GenericClient, key: &SessionKey, what: &str) -> Result<(SessionKey, i64), SqlError> {
    let ms = arbor_log::Clock::now_ms(&arbor_log::SystemClock);
    for n in 0.. {
        let suffix = if n == 0 { String::new() } else { format!("-{n}") };
        let side = SessionKey { dir: key.dir.clone(), name: format!("{}.{what}-{ms}{suffix}", key.name) };
        let row = c.query_typed_opt(
            "INSERT INTO arbor.sessions (dir, name) VALUES ($1, $2) ON CONFLICT (dir, name) DO NOTHING RETURNING id",
            &[(&side.dir, Type::TEXT), (&side.name, Type::TEXT)],
        )?;
        if let Some(r) = row {
            return Ok((side, r.get(0)));
        }
    }
    unreachable!("an unbounded counter always finds a free name")
}

/// Copies session `row` to a side name `FILE.<what>-<ms>` (lines, facts and filters).
pub(crate) fn copy_aside(
    c: &mut impl GenericClient,
    key: &SessionKey,
    row: &SessionRow,
    what: &str,
) -> Result<SessionKey, SqlError> {
    let (side, id) = side_session(c, key, what)?;
    c.execute_typed(
        "INSERT INTO arbor.lines (session, seq, off, bytes) SELECT $1, seq, off, bytes FROM arbor.lines WHERE session = $2",
        &[(&id, Type::INT8), (&row.id, Type::INT8)],
    )?;
    // A side copy keeps no index (it is read as a file is, by ranges); it keeps the filters of its bytes.
    index::forget(c, id)?;
    filters::copy(c, row, id)?;
    update(c, id, None, row.line_count, row.byte_size, &row.facts)?;
    Ok(side)
}

/// Makes session `row` end with a newline or be empty, as a file's appender
/// does: a whole record (or blank line) at the end gets its newline; a torn
/// one is moved to `FILE.torn-<ms>`. The new row and what was done.
pub(crate) fn repair_tail(
    c: &mut impl GenericClient,
    key: &SessionKey,
    row: SessionRow,
) -> Result<(SessionRow, Option<TailRepair>), SqlError> {
    let last = c.query_typed_opt(
        "SELECT seq, bytes, off FROM arbor.lines WHERE session = $1 ORDER BY seq DESC LIMIT 1",
        &[(&row.id, Type::INT8)],
    )?;
    let Some(last) = last else { return Ok((row, None)) };
    let (seq, bytes, off): (i64, Vec<u8>, i64) = (last.get(0), last.get(1), last.get(2));
    if bytes.ends_with(b"\n") {
        return Ok((row, None));
    }
    // The torn line changes: no filter may reach into it.
    filters::drop_from(c, row.id, off)?;
    // A torn tail ended the index (a line without its newline): the session stays unindexed until replaced whole.
    index::forget(c, row.id)?;
    if matches!(parse_line(&bytes).0, Parsed::Object(_) | Parsed::Blank) {
        c.execute_typed(
            "UPDATE arbor.lines SET bytes = bytes || '\\x0a'::bytea WHERE session = $1 AND seq = $2",
            &[(&row.id, Type::INT8), (&seq, Type::INT8)],
        )?;
        let new = update(c, row.id, None, row.line_count, row.byte_size + 1, &row.facts)?;
        return Ok((new.ok_or_else(|| missing_row(row.id))?, Some(TailRepair::AddedNewline)));
    }
    let (side, side_id) = side_session(c, key, "torn")?;
    lines::insert(c, side_id, 0, 0, &[&bytes])?;
    index::forget(c, side_id)?;
    update(c, side_id, None, 1, bytes.len() as i64, &facts_of(&[&bytes]))?;
    c.execute_typed(
        "DELETE FROM arbor.lines WHERE session = $1 AND seq = $2",
        &[(&row.id, Type::INT8), (&seq, Type::INT8)],
    )?;
    let (rest, _) = read_lines(c, row.id, 0)?;
    let facts = facts_of(&split_lines(&rest));
    let new = update(c, row.id, None, row.line_count - 1, rest.len() as i64, &facts)?;
    let repair = TailRepair::MovedTornTail { side_file: side.path(), bytes: bytes.len() as u64 };
    Ok((new.ok_or_else(|| missing_row(row.id))?, Some(repair)))
}
