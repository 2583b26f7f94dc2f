//! Lines going to the server: a file split into its physical lines (each
//! with its newline), inserted with their byte offsets, and beside them the
//! searchable text of each entry (`arbor.search`).

use postgres::types::{ToSql, Type};
use postgres::GenericClient;
use serde_json::Value;

use arbor_log::messages::searchable_text;
use arbor_log::reader::{parse_line, Parsed};

/// The physical lines of `bytes`, each with its newline (the last one
/// without, when the bytes do not end in a newline).
pub(crate) fn split_lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.split_inclusive(|&b| b == b'\n').collect()
}

/// At most this many bytes of lines go in one statement.
const CHUNK_BYTES: usize = 8 << 20;

/// What `arbor.search` keeps of one entry line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SearchRow {
    pub entry_id: String,
    pub entry_type: String,
    pub role: Option<String>,
    pub ts: String,
    pub body: String,
}

/// The search row of a line: an entry (not the header) with text.
pub(crate) fn search_row(line: &[u8]) -> Option<SearchRow> {
    let Parsed::Object(v) = parse_line(line).0 else { return None };
    let text = |k: &str| v.get(k).and_then(Value::as_str);
    let (entry_type, entry_id) = (text("type")?, text("id")?);
    if entry_type == "session" {
        return None;
    }
    // PostgreSQL's text holds no NUL character.
    let body = searchable_text(&v).replace('\0', " ");
    if body.trim().is_empty() {
        return None;
    }
    let role = v.get("message").and_then(|m| m.get("role")).and_then(Value::as_str).map(str::to_owned);
    Some(SearchRow {
        entry_id: entry_id.replace('\0', " "),
        entry_type: entry_type.replace('\0', " "),
        role: role.map(|r| r.replace('\0', " ")),
        ts: text("timestamp").unwrap_or_default().replace('\0', " "),
        body,
    })
}

/// Inserts `lines` of session `id` as seq `first_seq`, `first_seq + 1`, …
/// from byte `first_off` on, with their search rows, a chunk per statement.
pub(crate) fn insert(
    c: &mut impl GenericClient,
    id: i64,
    first_seq: i64,
    first_off: i64,
    lines: &[&[u8]],
) -> Result<(), postgres::Error> {
    let (mut seq, mut off) = (first_seq, first_off);
    let mut start = 0;
    while start < lines.len() {
        let mut end = start;
        let mut bytes = 0;
        while end < lines.len() && (end == start || bytes + lines[end].len() <= CHUNK_BYTES) {
            bytes += lines[end].len();
            end += 1;
        }
        let chunk = &lines[start..end];
        let seqs: Vec<i64> = (seq..seq + chunk.len() as i64).collect();
        let offs: Vec<i64> = chunk
            .iter()
            .scan(off, |o, l| {
                let here = *o;
                *o += l.len() as i64;
                Some(here)
            })
            .collect();
        c.execute_typed(
            "INSERT INTO arbor.lines (session, seq, off, bytes) \
             SELECT $1, t.s, t.o, t.b FROM unnest($2::int8[], $3::int8[], $4::bytea[]) AS t(s, o, b)",
            &[(&id, Type::INT8), (&seqs, Type::INT8_ARRAY), (&offs, Type::INT8_ARRAY), (&chunk, Type::BYTEA_ARRAY)],
        )?;
        insert_search(c, id, &seqs, chunk)?;
        seq += chunk.len() as i64;
        off += bytes as i64;
        start = end;
    }
    Ok(())
}

fn insert_search(c: &mut impl GenericClient, id: i64, seqs: &[i64], lines: &[&[u8]]) -> Result<(), postgres::Error> {
    let rows: Vec<(i64, SearchRow)> =
        seqs.iter().zip(lines).filter_map(|(&s, l)| search_row(l).map(|r| (s, r))).collect();
    if rows.is_empty() {
        return Ok(());
    }
    let seqs: Vec<i64> = rows.iter().map(|(s, _)| *s).collect();
    let ids: Vec<&str> = rows.iter().map(|(_, r)| r.entry_id.as_str()).collect();
    let types: Vec<&str> = rows.iter().map(|(_, r)| r.entry_type.as_str()).collect();
    let roles: Vec<Option<&str>> = rows.iter().map(|(_, r)| r.role.as_deref()).collect();
    let ts: Vec<&str> = rows.iter().map(|(_, r)| r.ts.as_str()).collect();
    let bodies: Vec<&str> = rows.iter().map(|(_, r)| r.body.as_str()).collect();
    let params: [(&(dyn ToSql + Sync), Type); 7] = [
        (&id, Type::INT8),
        (&seqs, Type::INT8_ARRAY),
        (&ids, Type::TEXT_ARRAY),
        (&types, Type::TEXT_ARRAY),
        (&roles, Type::TEXT_ARRAY),
        (&ts, Type::TEXT_ARRAY),
        (&bodies, Type::TEXT_ARRAY),
    ];
    c.execute_typed(
        "INSERT INTO arbor.search (session, seq, entry_id, entry_type, role, ts, body) \
         SELECT $1, t.* FROM unnest($2::int8[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) AS t",
        &params,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn lines_keep_their_newlines_and_a_torn_tail() {
        assert_eq!(split_lines(b"a\nb\n"), [&b"a\n"[..], b"b\n"]);
        assert_eq!(split_lines(b"a\n\nb"), [&b"a\n"[..], b"\n", b"b"]);
        assert!(split_lines(b"").is_empty());
        assert_eq!(split_lines(b"a\r\n").concat(), b"a\r\n");
    }

    #[test]
    fn entries_with_text_get_a_search_row() {
        let user = br#"{"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"fix the build\u0000 now"}}"#;
        let r = search_row(user).unwrap();
        assert_eq!((r.entry_id.as_str(), r.entry_type.as_str(), r.role.as_deref()), ("u1", "message", Some("user")));
        assert_eq!(r.body, "fix the build  now");
        assert_eq!(r.ts, "2025-01-01T00:00:00.000Z");
        let header = br#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w"}"#;
        assert_eq!(search_row(header), None);
        let model = br#"{"type":"model_change","id":"m","parentId":null,"timestamp":"t","provider":"p","modelId":"x"}"#;
        assert_eq!(search_row(model), None);
        assert_eq!(search_row(b"not json\n"), None);
        let label = br#"{"type":"label","id":"l","parentId":null,"timestamp":"t","targetId":"u1","label":"keep"}"#;
        assert_eq!(search_row(label).unwrap().body, "keep");
    }
}
