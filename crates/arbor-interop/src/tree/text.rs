//! `arbor tree`'s text: one row per entry, laid out as the selector lays it
//! out ([`super::layout`]), written as it is made.
//!
//! Nothing grows with the output: the rows are made one at a time by a walk
//! over the children lists ([`super::walk`]), and their entries are
//! decoded a batch at a time, each core decoding its share of the batch,
//! making those rows' texts and dropping the entries ([`Session::decode_shares`]);
//! the lines are then written in order.
//! Before the first row, one pass reads the assistant messages' tool calls
//! (a tool result's row names its call) without decoding them, keeping a
//! hash of each call's id and where it was made, and, with a filter, which
//! of them pi hides (a bit an entry).

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::io::{self, Write};

use unicode_width::UnicodeWidthChar;

use arbor_context::render::entry_text;
use arbor_log::{Entry, Role};
use arbor_tree::{Position, Session, TreeError};

use super::calls::{CallTable, CallsAt, CallsInBatch};
use super::filter::{facts_of, kind, kind_of, FilterMode};
use super::forest::NONE;
use super::layout::{level_budget, Style};
use super::walk::{pi_depth, Bits, Row, Shape, Walk};

/// The width the depth budget assumes when the output has none (a pipe, a file).
pub const DEFAULT_WIDTH: usize = 120;

/// Rows decoded at a time (a batch of decoded entries is what the output holds at once).
const BATCH: usize = 1024;

/// How `arbor tree` draws the tree.
#[derive(Debug, Clone, Default)]
pub struct TreeText {
    /// The home directory, which paths in rows shorten to `~` (none: not shortened).
    pub home: Option<String>,
    /// Only what this filter of the selector shows (every entry when `None`).
    pub filter: Option<FilterMode>,
    /// Levels of indentation before a row shows its level as a number.
    pub depth: Option<usize>,
    /// Cut every line to this many columns.
    pub width: Option<usize>,
}

/// Cuts `line` to `width` display columns.
fn cut(line: &str, width: usize) -> &str {
    let mut used = 0;
    for (i, c) in line.char_indices() {
        used += c.width().unwrap_or(0);
        if used > width {
            return &line[..i];
        }
    }
    line
}

/// Where every tool call is made (the assistant messages in display order,
/// where the last one wins, as in pi's selector) and, when `want_hidden`
/// is asked for, the assistant messages pi hides; read a few thousand at a
/// time without decoding them.
fn assistant_facts(s: &Session, shape: &Shape<'_>, want_hidden: bool) -> Result<(CallTable, Bits), TreeError> {
    let mut calls = CallTable::default();
    let mut hidden = Bits::new(if want_hidden { s.len() } else { 0 });
    let mut walk = Walk::new(shape, Style::Pi, 1);
    let mut assistants = std::iter::from_fn(|| walk.next_row())
        .map(|row| row.position)
        .filter(|&p| s.role_at(p) == Some(&Role::Assistant));
    loop {
        let part: Vec<Position> = assistants.by_ref().take(BATCH * 4).collect();
        if part.is_empty() {
            break;
        }
        for (&p, f) in part.iter().zip(facts_of(s, &part, None)?) {
            if want_hidden && f.hidden {
                hidden.insert(p.get());
            }
            for (id, _) in &f.calls {
                calls.push(id, p);
            }
        }
    }
    Ok((calls.sorted(), hidden))
}

/// The positions `mode` shows.
fn shown(s: &Session, mode: FilterMode, hidden: &Bits, leaf: Option<Position>) -> Result<Bits, TreeError> {
    let labelled: HashSet<Position> = s.labels()?.filter_map(|(id, _)| s.position_of(id)).collect();
    let mut shown = Bits::new(s.len());
    for p in s.positions() {
        let mut bits = kind_of(s, p) & !kind::UNKNOWN;
        if hidden.contains(p.get()) {
            bits |= kind::HIDDEN;
        }
        if mode.shows(bits, labelled.contains(&p), Some(p) == leaf) {
            shown.insert(p.get());
        }
    }
    Ok(shown)
}

/// Writes the tree of `s` as `arbor tree` does: one row per entry, the
/// active path marked, labels and the leaf.
pub fn print_tree(s: &Session, opts: &TreeText, out: &mut dyn Write) -> io::Result<()> {
    let tree = s.get_tree();
    if tree.is_empty() {
        writeln!(out, "(no entries)")?;
        return Ok(());
    }
    let home = opts.home.clone();
    let shape = Shape::new(&tree, s.len(), s.leaf_id().and_then(|id| s.position_of(id)));
    let (made_in, hidden) = assistant_facts(s, &shape, opts.filter.is_some()).map_err(io::Error::other)?;
    let shape = match opts.filter {
        None => shape,
        Some(mode) => {
            let leaf = shape.leaf();
            shape.with_shown(shown(s, mode, &hidden, leaf).map_err(io::Error::other)?)
        }
    };
    drop(hidden);
    // Read in passing: a session opened through its index builds no slot for this.
    let mut widest = None;
    let mut walk = Walk::new(&shape, Style::Pi, 1);
    s.for_each_id(std::iter::from_fn(|| walk.next_row()).map(|row| row.position), |_, id| {
        widest = widest.max(Some(id.chars().count()));
    });
    let id_width = widest.unwrap_or(8);
    let budget = opts
        .depth
        .unwrap_or_else(|| level_budget(opts.width.unwrap_or(DEFAULT_WIDTH).saturating_sub(id_width + 2)))
        .max(1);
    let style = if pi_depth(&shape) as usize <= budget { Style::Pi } else { Style::Compact };
    let rails = match style {
        Style::Pi => (NONE, NONE),
        Style::Compact => Walk::rails(&shape, style),
    };
    let mut walk = Walk::new(&shape, style, budget).with_rails(rails);
    let rows = RowWriter { s, made_in: &made_in, home: home.as_deref(), id_width, width: opts.width };
    loop {
        // A batch of rows, each with its prefix drawn while the walk is there.
        let batch: Vec<(Row, String)> = std::iter::from_fn(|| {
            let row = walk.next_row()?;
            Some((row, walk.prefix(&row).text))
        })
        .take(BATCH)
        .collect();
        if batch.is_empty() {
            break;
        }
        rows.write(&batch, out)?;
    }
    Ok(())
}

/// Writes rows a batch at a time: what every row of the tree shares.
struct RowWriter<'a> {
    s: &'a Session,
    /// Where each tool call was made.
    made_in: &'a CallTable,
    home: Option<&'a str>,
    /// The width of the id column.
    id_width: usize,
    /// The width every line is cut to, if any.
    width: Option<usize>,
}

impl RowWriter<'_> {
    /// Writes a batch of rows (each with its prefix): the entries decoded
    /// and their texts made on all cores, the lines written in order.
    fn write(&self, batch: &[(Row, String)], out: &mut dyn Write) -> io::Result<()> {
        let s = self.s;
        let positions: Vec<Position> = batch.iter().map(|(row, _)| row.position).collect();
        let (made_in, home) = (self.made_in, self.home);
        let made = s
            .decode_shares(&positions, |share, entries| share_texts(made_in, home, share, entries))
            .map_err(io::Error::other)?;
        let mut line = String::new();
        for (((row, prefix), &p), made) in batch.iter().zip(&positions).zip(made) {
            let Some((id, text)) = made else { continue };
            // A call made outside its share: the row is made again here, where the session is.
            let text = match text {
                Some(text) => text,
                None => {
                    let Some(e) = s.decode_at(p).map_err(io::Error::other)? else { continue };
                    let decoded = HashMap::from([(p, &e)]);
                    entry_text(&e, &CallsAt { session: s, made_at: self.made_in, batch: &decoded }, self.home)
                }
            };
            line.clear();
            // Padded by hand: a width beyond `u16::MAX` (an id that long) is past what `{:<width$}` takes.
            line.push_str(&id);
            line.push_str(&" ".repeat(self.id_width.saturating_sub(id.chars().count()) + 2));
            line.push_str(prefix);
            if row.active {
                line.push_str("• ");
            }
            if let Some(l) = s.get_label(&id).map_err(io::Error::other)? {
                line.push_str(&format!("[{l}] "));
            }
            line.push_str(&text);
            // A cut line keeps the leaf's mark: the text gives way.
            let mark = if row.leaf { "  ◀ leaf" } else { "" };
            let shown = match self.width {
                Some(w) => cut(&line, w.saturating_sub(mark.chars().count())),
                None => &line,
            };
            out.write_all(shown.as_bytes())?;
            out.write_all(mark.as_bytes())?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }
}

/// On one core, a share of a batch's rows: each entry's id and row text
/// (no text when its tool call was made outside the share), `None` for an
/// entry that is not there.
fn share_texts(made_in: &CallTable, home: Option<&str>, share: &[Position], entries: Vec<Option<Entry>>) -> Vec<Made> {
    let decoded: HashMap<Position, &Entry> =
        share.iter().zip(&entries).filter_map(|(&p, e)| Some((p, e.as_ref()?))).collect();
    let text = |e: &Entry| {
        let calls = CallsInBatch { made_at: made_in, batch: &decoded, missed: Cell::new(false) };
        let text = entry_text(e, &calls, home);
        (!calls.missed.get()).then_some(text)
    };
    entries.iter().map(|e| e.as_ref().map(|e| (e.id.clone(), text(e)))).collect()
}

/// A row as a core made it: the entry's id and its text (none when it must
/// be made again where the session is), or nothing for an entry not there.
type Made = Option<(String, Option<String>)>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every tool result's row names its call wherever the batches and the
    /// cores' shares cut the rows: a result whose call was made in the
    /// share before is made again through the session, not left nameless.
    #[test]
    fn every_tool_result_row_names_its_call_wherever_the_rows_are_cut() {
        let mut s = Session::in_memory("/w", arbor_test_support::deterministic_options());
        // A first row, so that shares and batches (even sizes) cut between a call and its result.
        s.append_message(json!({"role": "user", "content": "go", "timestamp": 1})).unwrap();
        let n = 1500;
        for k in 0..n {
            let call = json!({"type": "toolCall", "id": format!("c{k}"), "name": "read", "arguments": {"path": format!("f{k}.rs")}});
            s.append_message(json!({"role": "assistant", "content": [call], "provider": "p", "model": "m",
                "usage": {}, "stopReason": "toolUse", "timestamp": 1}))
                .unwrap();
            s.append_message(json!({"role": "toolResult", "toolCallId": format!("c{k}"), "toolName": "read",
                "content": [], "isError": false, "timestamp": 1}))
                .unwrap();
        }
        let mut out = vec![];
        print_tree(&s, &TreeText::default(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let results: Vec<&str> = text.lines().skip(2).step_by(2).collect();
        assert_eq!(results.len(), n);
        for (k, row) in results.iter().enumerate() {
            assert!(row.contains(&format!("• [read: f{k}.rs]")), "result {k}: {row}");
        }
    }
}
