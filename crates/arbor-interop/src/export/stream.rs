//! Texts an export writes without holding them. A text is a [`Chunks`]: a
//! string held in memory, or a long string of the session file (over
//! `arbor_log::long::HELD` bytes of JSON) decoded and handed over a block
//! at a time, as often as a writer asks. What a writer needs to know of
//! the whole text before its first byte (where trailing white space
//! starts, the longest run of backticks a fence must outgrow, how many
//! lines) is a [`Shape`], one pass; the text is then written in a second.

use std::io::{self, Write};

/// A text handed over in chunks, in order; a chunk never ends inside a
/// character. It can be read again (each read is a new pass).
pub(crate) trait Chunks {
    /// Calls `f` with each chunk of the text, in order.
    fn each(&self, f: &mut dyn FnMut(&str) -> io::Result<()>) -> io::Result<()>;

    /// The whole text when it is held (a writer then needs no first pass).
    fn held(&self) -> Option<&str> {
        None
    }
}

impl Chunks for &str {
    fn each(&self, f: &mut dyn FnMut(&str) -> io::Result<()>) -> io::Result<()> {
        f(self)
    }

    fn held(&self) -> Option<&str> {
        Some(self)
    }
}

impl Chunks for String {
    fn each(&self, f: &mut dyn FnMut(&str) -> io::Result<()>) -> io::Result<()> {
        f(self)
    }

    fn held(&self) -> Option<&str> {
        Some(self)
    }
}

/// The whole texts of the string values an entry's preview cut (an entry
/// on a line too long to hold is decoded as a preview: every long string
/// cut to its first few KB).
pub(crate) trait Cuts {
    /// The whole text of the string at `pointer` (a JSON pointer into the
    /// entry), when the preview cut it to `preview`.
    fn whole(&self, pointer: &str, preview: &str) -> Option<Box<dyn Chunks + '_>>;
    /// How many values the preview cut.
    fn count(&self) -> usize;
}

/// An entry decoded whole: nothing cut.
pub(crate) struct NoCuts;

impl Cuts for NoCuts {
    fn whole(&self, _: &str, _: &str) -> Option<Box<dyn Chunks + '_>> {
        None
    }

    fn count(&self) -> usize {
        0
    }
}

/// The cuts of an entry, and which of them a writer asked for: what it
/// did not ask for is shown as its preview, and the writer says so.
pub(crate) struct Asked<'c> {
    cuts: &'c dyn Cuts,
    asked: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

impl<'c> Asked<'c> {
    pub fn new(cuts: &'c dyn Cuts) -> Asked<'c> {
        Asked { cuts, asked: Default::default() }
    }

    /// How many cut values no writer asked for (shown as their previews).
    pub fn missed(&self) -> usize {
        self.cuts.count().saturating_sub(self.asked.borrow().len())
    }
}

impl Cuts for Asked<'_> {
    fn whole(&self, pointer: &str, preview: &str) -> Option<Box<dyn Chunks + '_>> {
        let whole = self.cuts.whole(pointer, preview)?;
        self.asked.borrow_mut().insert(pointer.to_owned());
        Some(whole)
    }

    fn count(&self) -> usize {
        self.cuts.count()
    }
}

/// A part's text: held (short, or decoded whole), or read whole from the file.
pub(crate) enum Src<'a> {
    Held(&'a str),
    Whole(Box<dyn Chunks + 'a>),
}

impl<'a> Src<'a> {
    /// The text at `pointer` (when there is one and the preview cut it), else `held`.
    pub fn of(cuts: &'a dyn Cuts, pointer: Option<String>, held: &'a str) -> Src<'a> {
        match pointer.and_then(|p| cuts.whole(&p, held)) {
            Some(whole) => Src::Whole(whole),
            None => Src::Held(held),
        }
    }

    pub fn get(&self) -> &dyn Chunks {
        match self {
            Src::Held(t) => t,
            Src::Whole(w) => w.as_ref(),
        }
    }

    /// True when the text is read from the file (too long to hold).
    pub fn is_whole(&self) -> bool {
        matches!(self, Src::Whole(_))
    }
}

/// What a pass over a text found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Bytes in all.
    pub len: usize,
    /// Bytes of white space at the start (`trim_start`).
    pub lead: usize,
    /// Where the text ends once trailing white space is cut (`trim_end`).
    pub end: usize,
    /// Where it ends once trailing newlines are cut (`trim_end_matches('\n')`).
    pub end_newlines: usize,
    /// The longest run of backticks.
    pub backticks: usize,
    /// Newlines in it.
    pub newlines: usize,
}

/// One pass over `src`.
pub(crate) fn shape(src: &dyn Chunks) -> io::Result<Shape> {
    let mut s = Shape::default();
    let (mut run, mut leading) = (0, true);
    src.each(&mut |chunk| {
        if leading {
            let rest = chunk.trim_start();
            s.lead += chunk.len() - rest.len();
            leading = rest.is_empty();
        }
        let kept = chunk.trim_end().len();
        if kept > 0 {
            s.end = s.len + kept;
        }
        let kept = chunk.trim_end_matches('\n').len();
        if kept > 0 {
            s.end_newlines = s.len + kept;
        }
        // Newlines and backticks are single bytes, never inside a character.
        for &b in chunk.as_bytes() {
            s.newlines += usize::from(b == b'\n');
            run = if b == b'`' { run + 1 } else { 0 };
            s.backticks = s.backticks.max(run);
        }
        s.len += chunk.len();
        Ok(())
    })?;
    Ok(s)
}

/// Calls `f` with the bytes `from..to` of `src` (both at character
/// boundaries), in chunks; the pass stops reading past `to`.
pub(crate) fn each_in(
    src: &dyn Chunks,
    (from, to): (usize, usize),
    f: &mut dyn FnMut(&str) -> io::Result<()>,
) -> io::Result<()> {
    let mut at = 0;
    let done = src.each(&mut |chunk| {
        let (start, end) = (at, at + chunk.len());
        at = end;
        if end <= from {
            return Ok(());
        }
        if start >= to {
            return Err(io::Error::other(Done));
        }
        let a = from.saturating_sub(start);
        let b = chunk.len() - end.saturating_sub(to);
        match chunk.get(a..b) {
            Some(part) if !part.is_empty() => f(part),
            Some(_) => Ok(()),
            None => Err(io::Error::new(io::ErrorKind::InvalidData, "a text cut inside a character")),
        }
    });
    match done {
        Err(e) if e.get_ref().is_some_and(|i| i.is::<Done>()) => Ok(()),
        other => other,
    }
}

/// The marker that stops a pass early.
#[derive(Debug)]
struct Done;

impl std::fmt::Display for Done {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("done")
    }
}

impl std::error::Error for Done {}

/// The first `max` bytes of `src` (cut back to a character boundary), held.
pub(crate) fn head(src: &dyn Chunks, max: usize) -> io::Result<String> {
    let mut out = String::new();
    each_in(src, (0, usize::MAX), &mut |chunk| {
        let room = max - out.len();
        if chunk.len() <= room {
            out.push_str(chunk);
            return Ok(());
        }
        let mut end = room;
        while !chunk.is_char_boundary(end) {
            end -= 1;
        }
        out.push_str(&chunk[..end]);
        Err(io::Error::other(Done))
    })
    .or_else(|e| if e.get_ref().is_some_and(|i| i.is::<Done>()) { Ok(()) } else { Err(e) })?;
    Ok(out)
}

/// The whole of `src` when it is at most `max` bytes (`None` when longer:
/// the pass stops there).
pub(crate) fn whole_up_to(src: &dyn Chunks, max: usize) -> io::Result<Option<String>> {
    let mut out = String::new();
    let mut over = false;
    let read = src.each(&mut |chunk| {
        if out.len() + chunk.len() > max {
            over = true;
            return Err(io::Error::other(Done));
        }
        out.push_str(chunk);
        Ok(())
    });
    match read {
        Err(e) if !e.get_ref().is_some_and(|i| i.is::<Done>()) => Err(e),
        _ => Ok((!over).then_some(out)),
    }
}

/// Markdown: the text, its trailing white space cut, then a newline.
pub(crate) fn md_text(src: &dyn Chunks, out: &mut dyn Write) -> io::Result<()> {
    let end = match src.held() {
        Some(t) => t.trim_end().len(),
        None => shape(src)?.end,
    };
    each_in(src, (0, end), &mut |c| out.write_all(c.as_bytes()))?;
    out.write_all(b"\n")
}

/// Markdown: the text quoted (`> ` before each line, `>` alone on an empty
/// one), its trailing white space cut; a `\r` before a newline dropped.
pub(crate) fn md_quoted(src: &dyn Chunks, out: &mut dyn Write) -> io::Result<()> {
    let end = match src.held() {
        Some(t) => t.trim_end().len(),
        None => shape(src)?.end,
    };
    let (mut line_start, mut cr) = (true, false);
    each_in(src, (0, end), &mut |chunk| {
        let mut rest = chunk;
        while !rest.is_empty() {
            let (piece, newline) = match rest.find('\n') {
                Some(i) => (&rest[..i], true),
                None => (rest, false),
            };
            rest = if newline { &rest[piece.len() + 1..] } else { "" };
            if !piece.is_empty() {
                let held_cr = piece.ends_with('\r');
                let body = &piece[..piece.len() - usize::from(held_cr)];
                if cr || !body.is_empty() {
                    if line_start {
                        out.write_all(b"> ")?;
                        line_start = false;
                    }
                    if cr {
                        out.write_all(b"\r")?;
                    }
                    out.write_all(body.as_bytes())?;
                }
                cr = held_cr;
            }
            if newline {
                out.write_all(if line_start { b">\n" } else { b"\n" })?;
                (line_start, cr) = (true, false);
            }
        }
        Ok(())
    })?;
    // (A text cut of its trailing white space never ends in `\r`.)
    if !line_start {
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Markdown: a fenced code block whose fence is longer than any run of
/// backticks inside, the text's trailing newlines cut.
pub(crate) fn md_fenced(lang: &str, src: &dyn Chunks, out: &mut dyn Write) -> io::Result<()> {
    let s = shape(src)?;
    let fence = "`".repeat(s.backticks.max(2) + 1);
    writeln!(out, "{fence}{lang}")?;
    each_in(src, (0, s.end_newlines), &mut |c| out.write_all(c.as_bytes()))?;
    write!(out, "\n{fence}\n")
}

/// Markdown: `body` folded under `summary`.
pub(crate) fn md_folded(
    summary: &str,
    out: &mut dyn Write,
    body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    write!(out, "<details>\n<summary>{summary}</summary>\n\n")?;
    body(out)?;
    out.write_all(b"\n</details>\n")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A held text handed over in chunks of at most `n` bytes (never inside a character).
    pub(crate) struct Split<'a>(pub &'a str, pub usize);

    impl Chunks for Split<'_> {
        fn each(&self, f: &mut dyn FnMut(&str) -> io::Result<()>) -> io::Result<()> {
            let mut rest = self.0;
            while !rest.is_empty() {
                let mut end = self.1.min(rest.len());
                while !rest.is_char_boundary(end) {
                    end += 1;
                }
                f(&rest[..end])?;
                rest = &rest[end..];
            }
            Ok(())
        }
    }

    fn written(f: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> String {
        let mut v = Vec::new();
        f(&mut v).unwrap();
        String::from_utf8(v).unwrap()
    }

    /// What the held writers of markdown.rs wrote before texts streamed.
    fn held_quoted(t: &str) -> String {
        t.trim_end().lines().map(|l| if l.is_empty() { ">\n".to_owned() } else { format!("> {l}\n") }).collect()
    }

    fn held_fenced(lang: &str, body: &str) -> String {
        let mut longest = 0;
        let mut run = 0;
        for c in body.chars() {
            run = if c == '`' { run + 1 } else { 0 };
            longest = longest.max(run);
        }
        let fence = "`".repeat(longest.max(2) + 1);
        format!("{fence}{lang}\n{}\n{fence}\n", body.trim_end_matches('\n'))
    }

    const TEXTS: [&str; 12] = [
        "",
        "  \n\t ",
        "plain",
        "a\n\nb\r\nc\r\n\r\n",
        "\r\n\r\nx\r",
        "x\ry\n\r\n z  \n",
        "é ```` ü\n``x`\n\n",
        "\n\n lead and ümlaut \u{3000}\u{2028}",
        "```",
        "> quoted\n>\n",
        "a\r\r\nb",
        "日本語\n\n\n日本",
    ];

    #[test]
    fn every_writer_in_chunks_writes_what_the_held_text_gives() {
        for t in TEXTS {
            let held = (
                format!("{}\n", t.trim_end()),
                held_quoted(t),
                held_fenced("text", t),
                (t.len() - t.trim_start().len(), t.trim_end().len(), t.trim_end_matches('\n').len()),
            );
            for n in 1..=7 {
                let src = Split(t, n);
                let got = (
                    written(|o| md_text(&src, o)),
                    written(|o| md_quoted(&src, o)),
                    written(|o| md_fenced("text", &src, o)),
                    {
                        let s = shape(&src).unwrap();
                        (s.lead, s.end, s.end_newlines)
                    },
                );
                assert_eq!(got, held, "{t:?} in chunks of {n}");
                assert_eq!(shape(&src).unwrap().newlines, t.matches('\n').count());
            }
        }
    }

    #[test]
    fn ranges_heads_and_bounded_wholes() {
        let t = "héllo wörld";
        for n in 1..=5 {
            let src = Split(t, n);
            let mut got = String::new();
            each_in(&src, (1, 8), &mut |c| {
                got.push_str(c);
                Ok(())
            })
            .unwrap();
            assert_eq!(got, &t[1..8]);
            assert_eq!(head(&src, 2).unwrap(), "h", "never inside a character");
            assert_eq!(head(&src, 100).unwrap(), t);
            assert_eq!(whole_up_to(&src, t.len()).unwrap().as_deref(), Some(t));
            assert_eq!(whole_up_to(&src, t.len() - 1).unwrap(), None);
        }
    }
}
