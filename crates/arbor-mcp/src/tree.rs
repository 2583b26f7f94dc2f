//! `read_tree`: the tree around an entry, drawn as `arbor tree` draws it
//! (`arbor_interop::tree`): the rows from a little above the entry's, as
//! many as the budget holds; a cursor goes on down the tree.

use std::collections::VecDeque;
use std::io::{self, Write};

use serde::Deserialize;

use arbor_interop::tree::{print_tree, FilterMode, TreeText};
use arbor_tree::sessions::Sessions;
use arbor_tree::SessionOptions;

use crate::error::ToolError;
use crate::page::{self, chars, At};
use crate::session::{damage_note, entry, id_at, open_read};

/// Rows shown above the entry's own.
const ABOVE: usize = 8;
/// The width rows are cut to unless told otherwise.
const WIDTH: u16 = 160;

/// `read_tree`'s arguments.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, Hash)]
pub struct TreeArgs {
    /// The session: its id, id prefix, file name or path.
    pub session: String,
    /// The entry to show the tree around (id or id prefix). Default: the leaf.
    #[serde(default)]
    pub entry: Option<String>,
    /// Which entries to draw: default (all but settings), no-tools, user-only, labeled-only, all.
    #[serde(default)]
    pub filter: Option<String>,
    /// Indent at most this many levels; deeper rows show their level as a number.
    #[serde(default)]
    #[schemars(range(min = 1, max = 200))]
    pub depth: Option<u16>,
    /// Cut every row to this many columns (default 160).
    #[serde(default)]
    #[schemars(range(min = 40, max = 1000))]
    pub width: Option<u16>,
    /// The most characters of the answer (default 20000).
    #[serde(default)]
    #[schemars(range(min = 500))]
    pub budget: Option<u64>,
    /// The nextCursor of the previous page, for the rows after it.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// The rows `args` asks for, as text.
pub fn read_tree(sessions: &dyn Sessions, opts: &SessionOptions, args: &TreeArgs) -> Result<String, ToolError> {
    let budget = page::budget(args.budget)?;
    let request = page::fingerprint(&(&args.session, &args.entry, &args.filter, args.depth, args.width));
    let at = page::resume("read_tree", request, args.cursor.as_deref())?;
    let filter = match args.filter.as_deref().map(str::trim).filter(|f| !f.is_empty()) {
        None => None,
        Some(name) => Some(FilterMode::named(name).ok_or_else(|| {
            let names: Vec<&str> = FilterMode::NAMES.iter().map(|(n, _)| *n).collect();
            ToolError::Argument(format!("no filter {name:?}: the filters are {}", names.join(", ")))
        })?),
    };
    let (path, mut s) = open_read(sessions, opts, &args.session)?;
    if !s.lines_sound(&s.positions().collect::<Vec<_>>()) {
        s.read_again_without_index()?;
    }
    let target = match &args.entry {
        Some(e) => Some(id_at(&s, entry(&s, &path, e)?)),
        None => s.leaf_id().map(str::to_owned),
    };
    let mut head = format!("session {}", s.session_id());
    if let Some(n) = s.session_name()? {
        head.push_str(&format!(" ({n})"));
    }
    head.push_str(&format!(": {} entries; • marks the active path, ◀ the leaf\n", s.len()));
    if let Some(note) = damage_note(&s) {
        head.push_str(&note);
        head.push('\n');
    }
    let width = args.width.unwrap_or(WIDTH).clamp(40, 1000);
    let text = TreeText {
        filter,
        depth: args.depth.map(|d| usize::from(d.max(1))),
        width: Some(usize::from(width)),
        home: None,
    };
    let room = budget.saturating_sub(chars(&head) + 250);
    let mut window = Window::new(target.clone(), at, room);
    match print_tree(&s, &text, &mut window) {
        Ok(()) => window.end_line(),
        Err(_) if window.full => {}
        Err(e) => return Err(ToolError::Internal(format!("{}: {e}", path.display()))),
    }
    let mut out = head;
    if window.start > 0 {
        out.push_str(&format!(
            "[… {} rows above: give `entry` an earlier entry (the root) to draw them]\n",
            window.start
        ));
    }
    for row in &window.rows {
        out.push_str(row);
        out.push('\n');
    }
    if window.rows.is_empty() && window.full {
        return Err(ToolError::Budget(format!(
            "budget {budget} is too small for one row; give more or a smaller width"
        )));
    }
    if window.full {
        let next = window.start + window.rows.len();
        let c = page::cursor("read_tree", request, At { item: next as u64, within: 0 });
        out.push_str(&format!("[… more rows below: call read_tree again with cursor \"{c}\"]\n"));
    } else if window.start == 0 && window.rows.is_empty() {
        out.push_str("(no entries)\n");
    }
    if let (Some(t), false) = (&target, window.found || at != At::default()) {
        out.push_str(&format!("(entry {t} is not drawn with this filter)\n"));
    }
    Ok(out)
}

/// Takes the rows of the drawing as they are written: from [`ABOVE`] rows
/// above the target's (or from the cursor's row) as many as fit; the
/// drawing is stopped (an error from the writer) once the page is full.
struct Window {
    target: Option<String>,
    /// The row the page starts at, when a cursor gave it.
    from: Option<usize>,
    room: usize,
    /// The row being written.
    line: Vec<u8>,
    /// Rows written so far.
    seen: usize,
    /// The rows kept before the target is found.
    before: VecDeque<String>,
    start: usize,
    rows: Vec<String>,
    used: usize,
    found: bool,
    full: bool,
}

impl Window {
    fn new(target: Option<String>, at: At, room: usize) -> Window {
        let from = (at != At::default()).then_some(at.item as usize);
        Window {
            target,
            from,
            room,
            line: Vec::new(),
            seen: 0,
            before: VecDeque::new(),
            start: 0,
            rows: Vec::new(),
            used: 0,
            found: false,
            full: false,
        }
    }

    /// A whole row: kept, or the page is full.
    fn row(&mut self, row: String) -> io::Result<()> {
        let k = self.seen;
        self.seen += 1;
        let taking = match self.from {
            Some(from) => k >= from,
            None => {
                if !self.found && self.is_target(&row) {
                    self.found = true;
                    self.start = k - self.before.len();
                    let above: Vec<String> = self.before.drain(..).collect();
                    for r in above {
                        self.keep(r)?;
                    }
                }
                self.found || self.target.is_none()
            }
        };
        if !taking {
            if self.from.is_none() {
                self.before.push_back(row);
                if self.before.len() > ABOVE {
                    self.before.pop_front();
                }
            }
            return Ok(());
        }
        if self.rows.is_empty() && self.from.is_some() {
            self.start = k;
        }
        self.keep(row)
    }

    fn keep(&mut self, row: String) -> io::Result<()> {
        let n = chars(&row) + 1;
        if self.used + n > self.room {
            self.full = true;
            return Err(io::Error::other("the page is full"));
        }
        self.used += n;
        self.rows.push(row);
        Ok(())
    }

    /// True for the target's row: it begins with the target's id and a space.
    fn is_target(&self, row: &str) -> bool {
        self.target.as_deref().is_some_and(|t| row.strip_prefix(t).is_some_and(|rest| rest.starts_with(' ')))
    }

    /// The last row, when the drawing did not end in a newline.
    fn end_line(&mut self) {
        if !self.line.is_empty() {
            let row = String::from_utf8_lossy(&std::mem::take(&mut self.line)).into_owned();
            let _ = self.row(row);
        }
    }
}

impl Write for Window {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.full {
            return Err(io::Error::other("the page is full"));
        }
        let mut rest = buf;
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            self.line.extend_from_slice(&rest[..i]);
            let row = String::from_utf8_lossy(&std::mem::take(&mut self.line)).into_owned();
            self.row(row)?;
            rest = &rest[i + 1..];
        }
        self.line.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
