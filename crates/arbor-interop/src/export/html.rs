//! The session as one self-contained HTML page: a sidebar tree of every
//! entry beside the transcript of one path, drawn by inline JavaScript from
//! data inside the page. Written as a stream, a few thousand entries at a
//! time, so memory follows the batch and not the session.
//!
//! The data: one line per chunk of up to [`CHUNK`] entries (in the order the
//! sidebar shows them), `ROWS<TAB>BODIES`: `ROWS` the chunk's entries as JSON
//! (parent, kind, flags, id, title and, when there is any, an object of
//! label, usage, calls, files, model), `BODIES` the cards' HTML (cleaned by
//! `ammonia`) as a JSON array, deflated and in base64, which the page inflates
//! only for the entries it shows or searches. Then the session's facts as JSON,
//! then the script. A Content-Security-Policy allows that one script (by its
//! hash), inline styles and `data:` images, and nothing else: no network, no
//! other script, no inline event handler.
//!
//! An entry on a line too long to hold is decoded as a preview, and each
//! text its preview cut is read from the file where the body shows it, a
//! block at a time, escaped on the way into its chunk's deflated data: the
//! page holds the whole text (a Markdown text that long as escaped plain
//! text, with a note), memory does not.

use std::collections::{BTreeSet, HashMap};
use std::io::{self, Write};

use arbor_log::Entry;
use arbor_tree::{Position, Session, TreeError};
use base64::Engine as _;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::body::{render, Limits, Rendered};
use super::markup::escape_into;
use super::stream::{each_in, Cuts, NoCuts};
use super::whole::{cuts_at, failed};
use crate::InteropError;

const TEMPLATE: &str = include_str!("page.html");
const CSS: &str = include_str!("page.css");
const JS: &str = include_str!("page.js");

/// Entries per chunk of bodies.
const CHUNK: usize = 64;
/// Entries decoded and rendered at a time (on all cores).
const BATCH: usize = CHUNK * 64;

/// What the page holds beyond the session's text.
#[derive(Debug, Clone)]
pub struct HtmlOptions {
    /// Show the session's working directory and file path (off by default:
    /// a page is often shared, and paths name the machine's user and folders).
    pub paths: bool,
    /// Tool outputs longer than this many bytes are cut to their head in the
    /// page (the card says how much was left out).
    pub max_output: usize,
    /// What a program that serves the page adds to it (none for a file).
    pub served: Option<Served>,
}

impl Default for HtmlOptions {
    fn default() -> Self {
        HtmlOptions { paths: false, max_output: 16 * 1024, served: None }
    }
}

/// What a program that serves the page (`arbor serve`) adds to it: a script
/// of its own, run after the page's (it reaches the page through
/// `window.arbor`: `append`, `decorate`, `open`, …), the data that script
/// reads (`<script id="arbor-served" type="application/json">`), and styles.
/// The page's policy then also allows that script (by its hash) and
/// connections to the page's own origin, and nothing more.
#[derive(Debug, Clone, Default)]
pub struct Served {
    /// The script's source.
    pub script: String,
    /// Its data, as JSON.
    pub data: Value,
    /// CSS added after the page's own.
    pub css: String,
}

/// Running facts of the whole session.
#[derive(Debug, Default)]
struct Totals {
    messages: u64,
    calls: u64,
    tokens: u64,
    cost: f64,
    errors: u64,
    aborted: u64,
    cut: u64,
    models: BTreeSet<String>,
}

/// Writes the page of the whole tree of `s`.
pub fn export_html(s: &Session, opts: &HtmlOptions, out: &mut dyn Write) -> Result<(), InteropError> {
    write_html(s, opts, out, true)
}

/// [`export_html`]; with `previews` off, every entry decoded whole (the
/// tests' yardstick for what the streamed texts must give).
pub(crate) fn write_html(
    s: &Session,
    opts: &HtmlOptions,
    out: &mut dyn Write,
    previews: bool,
) -> Result<(), InteropError> {
    let io = |e| InteropError::io(s.session_file().unwrap_or(s.session_dir()), e);
    let (order, parents) = order(s);
    let title = s.session_name()?.map_or_else(|| format!("Session {}", s.session_id()), str::to_owned);
    let fills = fills(opts.served.as_ref(), &super::markup::escape(&title));
    // Split first and fill only the template's own marks: nothing from the
    // session can add a split point or a mark.
    let mut parts = TEMPLATE.split("{{}}").map(|p| fill(p, &fills));
    let mut part = || parts.next().unwrap_or_default();
    out.write_all(part().as_bytes()).map_err(io)?;
    let totals = write_rows((s, previews), opts, &order, &parents, out)?;
    out.write_all(part().as_bytes()).map_err(io)?;
    let leaf = leaf_index(s, &order);
    out.write_all(data(s, opts, order.len(), leaf, &totals)?.as_bytes()).map_err(io)?;
    out.write_all(part().as_bytes()).map_err(io)?;
    out.write_all(first_view(s, opts, &order, leaf)?.as_bytes()).map_err(io)?;
    out.write_all(part().as_bytes()).map_err(io)?;
    out.write_all(JS.as_bytes()).map_err(io)?;
    out.write_all(part().as_bytes()).map_err(io)?;
    write_bodies((s, previews), opts, &order, out)?;
    out.write_all(part().as_bytes()).map_err(io)
}

/// The values of the template's marks: `{{CSP}}`, `{{TITLE}}`, `{{CSS}}`
/// and `{{SERVED}}` (the serving program's data and script, or nothing).
fn fills(served: Option<&Served>, title: &str) -> [(&'static str, String); 4] {
    let hash = |js: &str| base64::engine::general_purpose::STANDARD.encode(Sha256::digest(js.as_bytes()));
    let mut scripts = format!("'sha256-{}'", hash(JS));
    let mut connect = String::new();
    let (mut css, mut tail) = (CSS.to_owned(), String::new());
    if let Some(sv) = served {
        scripts.push_str(&format!(" 'sha256-{}'", hash(&sv.script)));
        connect.push_str("; connect-src 'self'");
        css.push_str(&sv.css);
        tail = format!(
            "<script id=\"arbor-served\" type=\"application/json\">{}</script>\n<script>{}</script>\n",
            safe_json(&sv.data.to_string()),
            sv.script
        );
    }
    let csp = format!(
        "default-src 'none'; base-uri 'none'; form-action 'none'; style-src 'unsafe-inline'; img-src data:; script-src {scripts}{connect}"
    );
    [("CSP", csp), ("TITLE", title.to_owned()), ("CSS", css), ("SERVED", tail)]
}

/// `part` with each `{{NAME}}` of `fills` replaced, in one pass over `part`
/// (a value is never searched for marks).
fn fill(part: &str, fills: &[(&'static str, String)]) -> String {
    let mut out = String::with_capacity(part.len());
    let mut rest = part;
    while let Some(at) = rest.find("{{") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let found = fills.iter().find(|(name, _)| after.starts_with(name) && after[name.len()..].starts_with("}}"));
        match found {
            Some((name, value)) => {
                out.push_str(value);
                rest = &after[name.len() + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The first pass: every entry's row, as one JSON array; the session's totals.
fn write_rows(
    (s, previews): (&Session, bool),
    opts: &HtmlOptions,
    order: &[Position],
    parents: &[i64],
    out: &mut dyn Write,
) -> Result<Totals, InteropError> {
    let io = |e| InteropError::io(s.session_file().unwrap_or(s.session_dir()), e);
    let mut totals = Totals::default();
    let mut calls: HashMap<String, String> = HashMap::new();
    let limits = Limits { max_output: opts.max_output, html: false };
    out.write_all(b"[").map_err(io)?;
    for (b, batch) in order.chunks(BATCH).enumerate() {
        let rendered: Vec<Option<Rendered>> = render_batch((s, previews), batch, |e, cuts| render(e, limits, cuts))?;
        let mut text = String::with_capacity(batch.len() * 120);
        for (k, r) in rendered.into_iter().enumerate() {
            let i = b * BATCH + k;
            if i > 0 {
                text.push_str(",\n");
            }
            let Some(mut r) = r else {
                text.push_str(&json!([parents[i], "O", 0, "", "(unreadable)"]).to_string());
                continue;
            };
            tally(&mut totals, &r);
            if let Some(line) = r.call_id.as_ref().and_then(|id| calls.remove(id)) {
                r.title = line;
            }
            for (id, tool, line) in &r.calls {
                calls.insert(id.clone(), super::tools::one_line(&format!("{tool} {line}"), 80));
            }
            let id = s.id_at(order[i]).map(|x| x.to_string()).unwrap_or_default();
            text.push_str(
                &row(json!(parents[i]), s.label(&id).map(|l| l.map(|l| l.text.as_str()))?, &id, &r).to_string(),
            );
        }
        out.write_all(safe_json(&text).as_bytes()).map_err(io)?;
        // A call whose result never came is forgotten after a while: memory stays bounded.
        if calls.len() > 100_000 {
            calls.clear();
        }
    }
    out.write_all(b"]").map_err(io)?;
    Ok(totals)
}

/// Each of `batch` rendered by `f` (`None` past the end): entries on short
/// lines decoded and rendered on all cores; one on a line too long to hold
/// decoded here as a preview, what it cut read from the file (`Cuts`)
/// (with `previews` off, every entry decoded whole on all cores).
fn render_batch<R: Send>(
    (s, previews): (&Session, bool),
    batch: &[Position],
    f: impl Fn(&Entry, &dyn Cuts) -> io::Result<R> + Sync,
) -> Result<Vec<Option<R>>, InteropError> {
    let short: Vec<Position> = batch.iter().copied().filter(|&p| !(previews && s.is_long_at(p))).collect();
    let mut done =
        s.decode_shares(&short, |_, entries| entries.into_iter().map(|e| e.map(|e| f(&e, &NoCuts))).collect())?;
    let mut done = done.drain(..);
    let mut out = Vec::with_capacity(batch.len());
    for &p in batch {
        let r = if previews && s.is_long_at(p) {
            let e = s.decode_previews(&[p])?.pop().flatten();
            let cuts = cuts_at(s, p)?;
            e.map(|e| f(&e, cuts.as_ref()))
        } else {
            done.next().flatten()
        };
        out.push(r.transpose().map_err(|e| failed(s, e))?);
    }
    Ok(out)
}

/// A card's body for the page: `[time, html]`, or one with texts read from the file.
enum Item {
    Held(Value),
    Long(Position, Rendered),
}

/// The second pass: the cards' bodies, one `<script type="text/plain">`
/// element per chunk of [`CHUNK`] entries, deflated and in base64 (on all
/// cores; a chunk with a text too long to hold, as it is written).
fn write_bodies(
    (s, previews): (&Session, bool),
    opts: &HtmlOptions,
    order: &[Position],
    out: &mut dyn Write,
) -> Result<(), InteropError> {
    let io = |e| failed(s, e);
    let limits = Limits { max_output: opts.max_output, html: true };
    for batch in order.chunks(BATCH) {
        let items = render_batch((s, previews), batch, |e, cuts| render(e, limits, cuts))?;
        let mut chunks: Vec<Result<String, Vec<Item>>> = Vec::new();
        let mut items = batch.iter().zip(items).map(|(&p, r)| match r {
            None => Item::Held(json!(["", ""])),
            Some(r) if r.long.is_empty() => Item::Held(json!([r.time, r.html])),
            Some(r) => Item::Long(p, r),
        });
        loop {
            let chunk: Vec<Item> = items.by_ref().take(CHUNK).collect();
            if chunk.is_empty() {
                break;
            }
            if chunk.iter().all(|i| matches!(i, Item::Held(_))) {
                let held = chunk.into_iter().filter_map(|i| if let Item::Held(v) = i { Some(v) } else { None });
                chunks.push(Ok(Value::Array(held.collect()).to_string()));
            } else {
                chunks.push(Err(chunk));
            }
        }
        let texts: Vec<String> = chunks.iter_mut().filter_map(|c| c.as_mut().ok().map(std::mem::take)).collect();
        let mut zipped = deflate_all(texts).into_iter();
        for c in chunks {
            out.write_all(b"<script type=\"text/plain\" class=\"arbor-z\">").map_err(io)?;
            match c {
                Ok(_) => out.write_all(zipped.next().unwrap_or_default().as_bytes()).map_err(io)?,
                Err(items) => write_long_chunk(s, items, out).map_err(io)?,
            }
            out.write_all(b"</script>\n").map_err(io)?;
        }
    }
    Ok(())
}

/// A chunk of bodies as [`deflate_all`] writes one, deflated and encoded
/// as it is written: the texts too long to hold read from the file.
fn write_long_chunk(s: &Session, items: Vec<Item>, out: &mut dyn Write) -> io::Result<()> {
    let b64 = base64::write::EncoderWriter::new(&mut *out, &base64::engine::general_purpose::STANDARD);
    let mut z = flate2::write::DeflateEncoder::new(b64, flate2::Compression::new(4));
    z.write_all(b"[")?;
    for (k, item) in items.into_iter().enumerate() {
        if k > 0 {
            z.write_all(b",")?;
        }
        match item {
            Item::Held(v) => z.write_all(v.to_string().as_bytes())?,
            Item::Long(p, r) => write_long_body(s, p, &r, &mut z)?,
        }
    }
    z.write_all(b"]")?;
    z.finish()?.finish()?;
    Ok(())
}

/// `[time, html]` of a body with texts too long to hold, each read from
/// the file where it goes, escaped as HTML and then as a JSON string.
fn write_long_body(s: &Session, p: Position, r: &Rendered, out: &mut dyn Write) -> io::Result<()> {
    write!(out, "[{},\"", Value::from(r.time.as_str()))?;
    let cuts = cuts_at(s, p).map_err(io::Error::other)?;
    let (mut at, mut escaped) = (0, String::new());
    for ins in &r.long {
        json_str_into(out, &r.html[at..ins.at])?;
        at = ins.at;
        let Some(src) = cuts.whole(&ins.pointer, &ins.preview) else {
            return Err(io::Error::other(TreeError::Changed {
                path: s.session_file().unwrap_or(s.session_dir()).to_owned(),
                line: Some(s.line_at(p)),
                what: "a long text of the line changed while the page was written".to_owned(),
            }));
        };
        each_in(src.as_ref(), ins.range, &mut |chunk| {
            escaped.clear();
            escape_into(&mut escaped, chunk);
            json_str_into(out, &escaped)
        })?;
    }
    json_str_into(out, &r.html[at..])?;
    out.write_all(b"\"]")
}

/// `s` as the inside of a JSON string.
fn json_str_into(out: &mut dyn Write, s: &str) -> io::Result<()> {
    let mut last = 0;
    for (i, b) in s.bytes().enumerate() {
        let rep: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => {
                out.write_all(&s.as_bytes()[last..i])?;
                write!(out, "\\u{b:04x}")?;
                last = i + 1;
                continue;
            }
            _ => continue,
        };
        out.write_all(&s.as_bytes()[last..i])?;
        out.write_all(rep)?;
        last = i + 1;
    }
    out.write_all(&s.as_bytes()[last..])
}

/// The node the page opens on: the leaf's.
fn leaf_index(s: &Session, order: &[Position]) -> Option<usize> {
    let leaf = s.leaf_id().and_then(|id| s.position_of(id))?;
    order.iter().position(|&o| o == leaf)
}

/// How many entries at the end of the leaf's path the page can show before
/// the rest of it is read: their bodies come before the script.
const FIRST_VIEW: usize = 96;

/// The bodies of the last [`FIRST_VIEW`] entries of the path to the leaf:
/// `{"n": [node, …], "b": [[time, html], …]}`. An entry on a line too long
/// to hold is left out (the page reads it from its chunk).
fn first_view(s: &Session, opts: &HtmlOptions, order: &[Position], leaf: Option<usize>) -> Result<String, TreeError> {
    let Some(leaf) = leaf else { return Ok("{}".to_owned()) };
    let path = s.branch_positions(s.leaf_id());
    let tail: Vec<Position> =
        path[path.len().saturating_sub(FIRST_VIEW)..].iter().copied().filter(|&p| !s.is_long_at(p)).collect();
    let tail = tail.as_slice();
    let wanted: std::collections::HashSet<Position> = tail.iter().copied().collect();
    let mut index: HashMap<Position, usize> = HashMap::with_capacity(tail.len());
    // The path's nodes sit at or before the leaf's in the order.
    for (i, p) in order[..=leaf].iter().enumerate().rev() {
        if wanted.contains(p) {
            index.insert(*p, i);
            if index.len() == tail.len() {
                break;
            }
        }
    }
    let limits = Limits { max_output: opts.max_output, html: true };
    let mut nodes = Vec::new();
    let mut bodies = Vec::new();
    for (p, e) in tail.iter().zip(s.decode_many(tail)?) {
        let (Some(&n), Some(e)) = (index.get(p), e) else { continue };
        let Ok(r) = render(&e, limits, &NoCuts) else { continue };
        nodes.push(n);
        bodies.push(json!([r.time, r.html]));
    }
    Ok(safe_json(&json!({"n": nodes, "b": bodies}).to_string()))
}

fn tally(t: &mut Totals, r: &Rendered) {
    if matches!(r.kind, 'u' | 'a' | 'r' | 'b' | 's' | 'm') {
        t.messages += 1;
    }
    t.calls += r.calls.len() as u64;
    if let Some((tok, cost)) = r.usage {
        t.tokens += tok;
        t.cost += cost;
    }
    t.errors += u64::from(r.flags & super::body::ERROR != 0);
    t.aborted += u64::from(r.flags & super::body::ABORTED != 0);
    t.cut += u64::from(r.flags & super::body::CUT != 0);
    if let Some(m) = &r.model {
        if t.models.len() < 64 {
            t.models.insert(m.clone());
        }
    }
}

/// An entry's row: `[parent, kind, flags, id, title, extra?]` (`parent`:
/// the parent's place in the order, or its id in a live item).
pub(super) fn row(parent: Value, label: Option<&str>, id: &str, r: &Rendered) -> Value {
    let mut extra = Map::new();
    if let Some(l) = label {
        extra.insert("l".into(), l.into());
    }
    if let Some((tok, cost)) = r.usage {
        extra.insert("u".into(), json!([tok, cost]));
    }
    if !r.calls.is_empty() {
        extra.insert("c".into(), r.calls.iter().map(|(_, tool, _)| tool.as_str()).collect());
    }
    if !r.files.0.is_empty() {
        extra.insert("r".into(), json!(r.files.0));
    }
    if !r.files.1.is_empty() {
        extra.insert("w".into(), json!(r.files.1));
    }
    if let Some(m) = &r.model {
        extra.insert("m".into(), m.as_str().into());
    }
    let mut row = vec![parent, json!(r.kind.to_string()), json!(r.flags), json!(id), json!(r.title)];
    if !extra.is_empty() {
        row.push(Value::Object(extra));
    }
    Value::Array(row)
}

/// Each text deflated and in base64, on all cores.
fn deflate_all(lines: Vec<String>) -> Vec<String> {
    let one = |text: String| {
        let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(4));
        let packed = z.write_all(text.as_bytes()).and_then(|()| z.finish()).unwrap_or_default();
        base64::engine::general_purpose::STANDARD.encode(packed)
    };
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).clamp(1, 8);
    if threads < 2 || lines.len() < 2 {
        return lines.into_iter().map(one).collect();
    }
    let per = lines.len().div_ceil(threads);
    let mut parts: Vec<Vec<String>> = Vec::new();
    let mut lines = lines.into_iter().peekable();
    while lines.peek().is_some() {
        parts.push(lines.by_ref().take(per).collect());
    }
    std::thread::scope(|sc| {
        let handles: Vec<_> =
            parts.into_iter().map(|p| sc.spawn(move || p.into_iter().map(one).collect::<Vec<_>>())).collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    })
}

/// The session's facts for the page.
fn data(s: &Session, opts: &HtmlOptions, entries: usize, leaf: Option<usize>, t: &Totals) -> Result<String, TreeError> {
    let h = s.header();
    let mut session = json!({
        "id": h.id,
        "name": s.session_name()?,
        "timestamp": h.timestamp,
        "entries": entries,
        "messages": t.messages,
        "calls": t.calls,
        "tokens": t.tokens,
        "cost": t.cost,
        "errors": t.errors,
        "aborted": t.aborted,
        "cut": t.cut,
        "maxOutput": opts.max_output,
        "models": t.models.iter().collect::<Vec<_>>(),
        "chunk": CHUNK,
    });
    if opts.paths {
        session["cwd"] = json!(h.cwd);
        session["file"] = json!(s.session_file().map(|p| p.display().to_string()));
    }
    Ok(safe_json(&json!({ "session": session, "leaf": leaf.map_or(-1, |l| l as i64) }).to_string()))
}

/// Every live entry in the sidebar's order, and each one's parent (an index
/// into the order, -1 for a root): depth first, and at a fork the side
/// branches (oldest first) before the child that carries on (the one on the
/// active path, else the newest), so the path to the leaf runs down the left
/// edge and a long session does not drift right.
fn order(s: &Session) -> (Vec<Position>, Vec<i64>) {
    let tree = s.get_tree();
    let mut active = vec![false; s.positions().len()];
    for p in s.branch_positions(None) {
        active[p.get()] = true;
    }
    let ordered = |kids: &[Position]| -> Vec<Position> {
        let cont = kids.iter().rposition(|k| active[k.get()]).unwrap_or(kids.len().saturating_sub(1));
        let mut v: Vec<Position> = kids.iter().enumerate().filter(|&(i, _)| i != cont).map(|(_, &k)| k).collect();
        v.extend(kids.get(cont));
        v
    };
    let mut order = Vec::with_capacity(s.len());
    let mut parents = Vec::with_capacity(s.len());
    let mut stack: Vec<(Position, i64)> = ordered(tree.root_positions()).into_iter().rev().map(|r| (r, -1)).collect();
    while let Some((p, parent)) = stack.pop() {
        let me = order.len() as i64;
        order.push(p);
        parents.push(parent);
        stack.extend(ordered(tree.child_positions(p)).into_iter().rev().map(|k| (k, me)));
    }
    (order, parents)
}

/// JSON that can sit inside a `<script>` element: `<`, `>` and `&` (which
/// could close the element or open a comment) and the JavaScript line
/// separators written as escapes. They only occur inside strings, where the
/// escapes mean the same characters.
fn safe_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + json.len() / 64);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_closers_are_escaped() {
        let raw = serde_json::to_string(&json!({"t": "</script><!-- & \u{2028}"})).unwrap();
        let safe = safe_json(&raw);
        assert!(!safe.contains("</script"), "{safe}");
        assert!(!safe.contains("<!--"), "{safe}");
        let back: Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back["t"], "</script><!-- & \u{2028}");
    }
}
