//! Lines going to the server: a file split into its physical lines (each
//! with its newline), inserted with their byte offsets.

use postgres::types::Type;
use postgres::GenericClient;

/// The physical lines of `bytes`, each with its newline (the last one
/// without, when the bytes do not end in a newline).
pub(crate) fn split_lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.split_inclusive(|&b| b == b'\n').collect()
}

/// At most this many bytes of lines go in one statement.
pub(crate) const CHUNK_BYTES: usize = 8 << 20;

/// Inserts `lines` of session `id` as seq `first_seq`, `first_seq + 1`, …
/// from byte `first_off` on, a chunk per statement.
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
        seq += chunk.len() as i64;
        off += bytes as i64;
        start = end;
    }
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
}
