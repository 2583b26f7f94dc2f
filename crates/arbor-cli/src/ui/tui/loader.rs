//! What the selector needs from the session's entries, read when it is
//! needed: the [`Loader`] opens the pure [`TreeSelector`] from the session's
//! heads, then tells it, in this order of urgency,
//!
//! 1. before each draw ([`Loader::prepare`]): whether the assistant
//!    messages around the window are ones pi hides, and the text of the rows
//!    about to be drawn (each entry decoded once, for that row only);
//! 2. between keystrokes ([`Loader::step`], a few milliseconds at a time on
//!    all cores): every entry's facts in display order (the hidden
//!    assistant messages, the searchable texts, the tool calls), read from
//!    each line without decoding it (`arbor_context::render::message_facts`).
//!
//! Until step 2 is done the count may still change and a search waits; the
//! rows on screen are exact from the first draw. Then, a step at a time,
//! each filter mode's list is made and kept ([`TreeSelector::warm`]).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use compact_str::CompactString;

use arbor_context::render::{entry_text, CallText, ToolCalls};
use arbor_log::Role;
use arbor_tree::{Position, Session};

use super::selector::{FilterMode, SelectorData, TreeSelector};
use crate::shared::filter::facts_of;
use crate::shared::forest::Forest;

/// How long one [`Loader::step`] aims to take, so keys are answered in time.
const STEP: Duration = Duration::from_millis(12);

/// Feeds a selector from its session (see the module docs).
#[derive(Debug, Default)]
pub struct Loader {
    home: Option<String>,
    /// Every tool call by id, as a row shows it; complete once `next` reaches the end.
    calls: HashMap<CompactString, String>,
    /// The next entry (display index) whose facts are read.
    next: u32,
    /// Entries per step, adapted to [`STEP`].
    chunk: usize,
}

/// A tool result's call, before every call is known: looked for among the
/// result's ancestors, where it nearly always is.
struct NearbyCalls<'a> {
    session: &'a Session,
    forest: &'a Forest,
    k: u32,
}

impl CallText for NearbyCalls<'_> {
    fn call_text(&self, id: &str, home: Option<&str>) -> Option<String> {
        let mut cur = self.forest.parent(self.k);
        for _ in 0..16 {
            let k = cur?;
            let p = self.forest.position(k);
            if self.session.role_at(p) == Some(&Role::Assistant) {
                let mut calls = ToolCalls::new();
                // A file changed on disk names no call here; the rows say why.
                if let Ok(Some(e)) = self.session.decode_at(p) {
                    calls.record(&e);
                }
                if let Some(t) = calls.call_text(id, home) {
                    return Some(t);
                }
            }
            cur = self.forest.parent(k);
        }
        None
    }
}

impl Loader {
    /// A loader for a new selector; `home` shortens paths in tool calls.
    /// Each call is given the session the selector was opened on.
    pub fn new(home: Option<String>) -> Loader {
        Loader { home, calls: HashMap::new(), next: 0, chunk: 2048 }
    }

    /// A selector over `session` as it is now, on the first of the entries
    /// `initial` (by id) the list can show (the leaf when there are none), and a loader to feed it.
    pub fn open(
        session: &Session,
        home: Option<String>,
        (page, width): (usize, usize),
        initial: &[&str],
        mode: FilterMode,
    ) -> (Loader, TreeSelector) {
        let data = SelectorData::of_session(session);
        let at: Vec<u32> = initial.iter().filter_map(|id| data.index_of(id)).collect();
        (Loader::new(home), TreeSelector::new(data, page, width, &at, mode))
    }

    /// True when every entry's facts are read and nothing is left to do between keystrokes.
    pub fn is_done(&self, sel: &TreeSelector) -> bool {
        self.read_all(sel) && !sel.wants_warm()
    }

    /// True when every entry's facts are read.
    fn read_all(&self, sel: &TreeSelector) -> bool {
        self.next as usize >= sel.data().len()
    }

    /// Reads the next entries' facts for about [`STEP`], or once all are
    /// read makes one filter mode's list ([`TreeSelector::warm`]); false once
    /// there is nothing left to do.
    pub fn step(&mut self, session: &Session, sel: &mut TreeSelector) -> bool {
        let n = sel.data().len() as u32;
        if self.next >= n {
            return sel.warm() && sel.wants_warm();
        }
        let start = Instant::now();
        let end = (self.next as usize + self.chunk).min(n as usize) as u32;
        let positions: Vec<Position> = (self.next..end).map(|k| sel.data().forest().position(k)).collect();
        // A file changed on disk: the rest is not read (the view says so when it reads a row).
        let Ok(facts) = facts_of(session, &positions, self.home.as_deref()) else {
            self.next = n;
            return false;
        };
        for (k, f) in (self.next..end).zip(facts) {
            sel.classify(k, f.hidden);
            sel.add_text(&f.search);
            for (id, text) in f.calls {
                self.calls.insert(id.into(), text);
            }
        }
        self.next = end;
        let took = start.elapsed();
        self.chunk = if took < STEP / 2 {
            self.chunk * 2
        } else if took > STEP {
            (self.chunk / 2).max(64)
        } else {
            self.chunk
        };
        if self.next >= n {
            // Every entry is known: the count is final, and rows get their calls from the whole session.
            sel.refresh();
            sel.clear_row_texts();
            return sel.wants_warm();
        }
        true
    }

    /// Reads `chunk` entries a step from now on (tests: steps of a few entries).
    #[cfg(test)]
    pub fn set_chunk(&mut self, chunk: usize) {
        self.chunk = chunk;
    }

    /// Reads everything now (tests).
    #[cfg(test)]
    pub fn finish(&mut self, session: &Session, sel: &mut TreeSelector) {
        while self.step(session, sel) {}
    }

    /// Before a draw: the kinds and texts of the rows around the window.
    pub fn prepare(&mut self, session: &Session, sel: &mut TreeSelector) {
        // Hidden assistant messages near the window change the window: a few rounds settle it.
        for _ in 0..8 {
            let unknown: Vec<u32> = sel.around_window().into_iter().filter(|&k| sel.data().is_unknown(k)).collect();
            if unknown.is_empty() {
                break;
            }
            let positions: Vec<Position> = unknown.iter().map(|&k| sel.data().forest().position(k)).collect();
            let mut hid = false;
            let Ok(facts) = facts_of(session, &positions, self.home.as_deref()) else { break };
            for (k, f) in unknown.into_iter().zip(facts) {
                if sel.classify(k, f.hidden) && f.hidden {
                    hid = true;
                }
            }
            if !hid {
                break;
            }
            sel.refresh();
        }
        let missing: Vec<u32> = sel.around_window().into_iter().filter(|&k| !sel.has_row_text(k)).collect();
        self.render(session, sel, missing);
    }

    /// Makes the texts of rows `ks` (display indexes).
    pub fn render(&mut self, session: &Session, sel: &mut TreeSelector, missing: Vec<u32>) {
        if missing.is_empty() {
            return;
        }
        let positions: Vec<Position> = missing.iter().map(|&k| sel.data().forest().position(k)).collect();
        let entries = match session.decode_many(&positions) {
            Ok(entries) => entries,
            // A file changed on disk: the rows say so instead of their text.
            Err(e) => {
                let said = e.to_string();
                for k in missing {
                    sel.set_row_text(k, said.clone());
                }
                return;
            }
        };
        let complete = self.read_all(sel);
        for (k, e) in missing.into_iter().zip(entries) {
            let Some(e) = e else { continue };
            let text = if complete {
                entry_text(&e, &self.calls, self.home.as_deref())
            } else {
                let nearby = NearbyCalls { session, forest: sel.data().forest(), k };
                entry_text(&e, &nearby, self.home.as_deref())
            };
            sel.set_row_text(k, text);
        }
    }
}
