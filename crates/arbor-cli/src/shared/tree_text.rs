//! `arbor tree`'s text: one row per entry, laid out as the selector lays it
//! out ([`super::layout`]), written as it is made.
//!
//! Nothing grows with the output: the rows are laid out as a few integers
//! each, and their entries are decoded a batch at a time (on all cores) and
//! dropped once written. Before the first row, one pass reads the assistant
//! messages' tool calls (a tool result's row names its call) without
//! decoding them, and, with a filter, which of them pi hides.

use std::collections::{HashMap, HashSet};
use std::io::Write;

use anyhow::Result;
use compact_str::CompactString;
use unicode_width::UnicodeWidthChar;

use arbor_context::render::entry_text;
use arbor_log::{Entry, Role};
use arbor_tree::{Position, Session};

use super::filter::{facts_of, kind, kind_of, FilterMode};
use super::forest::{Forest, Visible};
use super::layout::{level_budget, style_for, Layout};
use super::output::{home, CallsAt};

/// The width the depth budget assumes when the output has none (a pipe, a file).
pub const DEFAULT_WIDTH: usize = 120;

/// Rows decoded at a time (a batch of decoded entries is what the output holds at once).
const BATCH: usize = 1024;

/// How `arbor tree` draws the tree.
#[derive(Debug, Clone, Copy, Default)]
pub struct TreeText {
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

/// Where every tool call is made (the display index of its assistant
/// message, by call id; in display order the last one wins, as in pi's
/// selector) and, when `hidden` is asked for, the assistant messages pi hides;
/// read a few thousand at a time without decoding them.
fn assistant_facts(
    s: &Session,
    forest: &Forest,
    want_hidden: bool,
) -> (HashMap<CompactString, Position>, HashSet<u32>) {
    let mut calls = HashMap::new();
    let mut hidden = HashSet::new();
    let assistants: Vec<u32> =
        (0..forest.len() as u32).filter(|&k| s.role_at(forest.position(k)) == Some(&Role::Assistant)).collect();
    for part in assistants.chunks(BATCH * 4) {
        let positions: Vec<Position> = part.iter().map(|&k| forest.position(k)).collect();
        for (&k, f) in part.iter().zip(facts_of(s, &positions, None)) {
            if want_hidden && f.hidden {
                hidden.insert(k);
            }
            calls.extend(f.calls.into_iter().map(|(id, _)| (CompactString::from(id), forest.position(k))));
        }
    }
    (calls, hidden)
}

/// Writes the tree of `s` as `arbor tree` does: one row per entry, the
/// active path marked, labels and the leaf.
pub fn print_tree(s: &Session, opts: &TreeText, out: &mut dyn Write) -> Result<()> {
    let forest = Forest::of_session(s);
    if forest.is_empty() {
        writeln!(out, "(no entries)")?;
        return Ok(());
    }
    let home = home();
    let (made_in, hidden) = assistant_facts(s, &forest, opts.filter.is_some());
    let leaf = forest.leaf();
    let vis = match opts.filter {
        None => Visible::new(&forest, |_| true, &[]),
        Some(mode) => {
            let labelled: HashSet<u32> = {
                let by = forest.index_by_position(s.len());
                s.labels().filter_map(|(id, _)| s.position_of(id)).map(|p| by[p.get()]).collect()
            };
            Visible::new(
                &forest,
                |k| {
                    let mut bits = kind_of(s, forest.position(k)) & !kind::UNKNOWN;
                    if hidden.contains(&k) {
                        bits |= kind::HIDDEN;
                    }
                    mode.shows(bits, labelled.contains(&k), Some(k) == leaf)
                },
                &[],
            )
        }
    };
    // Read in passing: a session opened through its index builds no slot for this.
    let mut widest = None;
    s.for_each_id((0..vis.len() as u32).map(|v| forest.position(vis.node(v))), |_, id| {
        widest = widest.max(Some(id.chars().count()));
    });
    let id_width = widest.unwrap_or(8);
    let budget = opts
        .depth
        .unwrap_or_else(|| level_budget(opts.width.unwrap_or(DEFAULT_WIDTH).saturating_sub(id_width + 2)))
        .max(1);
    let layout = Layout::new(&forest, &vis, style_for(&forest, budget), budget);
    let mut line = String::new();
    for start in (0..vis.len() as u32).step_by(BATCH) {
        let batch: Vec<u32> = (start..(start + BATCH as u32).min(vis.len() as u32)).collect();
        let batch = &batch[..];
        let positions: Vec<Position> = batch.iter().map(|&v| forest.position(vis.node(v))).collect();
        let entries = s.decode_many(&positions);
        let decoded: HashMap<Position, &Entry> =
            positions.iter().zip(&entries).filter_map(|(&p, e)| Some((p, e.as_ref()?))).collect();
        let calls = CallsAt { session: s, made_at: &made_in, batch: &decoded };
        for (&v, e) in batch.iter().zip(&entries) {
            let Some(e) = e else { continue };
            let k = vis.node(v);
            line.clear();
            // Padded by hand: a width beyond `u16::MAX` (an id that long) is past what `{:<width$}` takes.
            line.push_str(&e.id);
            line.push_str(&" ".repeat(id_width.saturating_sub(e.id.chars().count()) + 2));
            line.push_str(&layout.prefix(&vis, v).text);
            if forest.is_active(k) {
                line.push_str("• ");
            }
            if let Some(l) = s.get_label(&e.id) {
                line.push_str(&format!("[{l}] "));
            }
            line.push_str(&entry_text(e, &calls, home.as_deref()));
            // A cut line keeps the leaf's mark: the text gives way.
            let mark = if Some(k) == leaf { "  ◀ leaf" } else { "" };
            let shown = match opts.width {
                Some(w) => cut(&line, w.saturating_sub(mark.chars().count())),
                None => &line,
            };
            out.write_all(shown.as_bytes())?;
            out.write_all(mark.as_bytes())?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}
