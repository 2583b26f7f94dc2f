//! Entries of an export with the whole texts their previews cut: an entry
//! on a line too long to hold is decoded as a preview (every long string
//! cut to its first few KB; [`Session::decode_previews`]), and a writer
//! reads each cut text whole from the file when it writes it ([`Cuts`]),
//! a block at a time, each block checked against what the line's reduction
//! read ([`LongLine::decode`]).

use std::io;

use arbor_tree::{LongLine, Position, Session, TreeError};

use super::stream::{Chunks, Cuts, NoCuts};
use crate::InteropError;

/// The cut strings of a long line.
struct LineCuts<'s>(LongLine<'s>);

impl Cuts for LineCuts<'_> {
    fn whole(&self, pointer: &str, preview: &str) -> Option<Box<dyn Chunks + '_>> {
        let text = self.0.text_at(pointer, preview)?;
        Some(Box::new(Cut(&self.0, text)))
    }

    fn count(&self) -> usize {
        self.0.texts().len()
    }
}

/// One cut string, decoded from the file at each pass.
struct Cut<'a>(&'a LongLine<'a>, &'a arbor_log::long::text::LongText);

impl Chunks for Cut<'_> {
    fn each(&self, f: &mut dyn FnMut(&str) -> io::Result<()>) -> io::Result<()> {
        self.0.decode(self.1, f)
    }
}

/// What the preview of the entry at `p` cut (nothing for an entry decoded whole).
pub(crate) fn cuts_at(s: &Session, p: Position) -> Result<Box<dyn Cuts + '_>, TreeError> {
    if !s.is_long_at(p) {
        return Ok(Box::new(NoCuts));
    }
    Ok(match s.long_line_at(p)? {
        Some(line) => Box::new(LineCuts(line)),
        None => Box::new(NoCuts),
    })
}

/// A failed write of an export as the error to report: a line that changed
/// on disk while a text was read from it is [`TreeError::Changed`] (naming
/// the file and line); any other error names the session's file.
pub(crate) fn failed(s: &Session, e: io::Error) -> InteropError {
    let path = s.session_file().unwrap_or(s.session_dir());
    if !e.get_ref().is_some_and(|inner| inner.is::<TreeError>()) {
        return InteropError::io(path, e);
    }
    match e.into_inner().map(|inner| inner.downcast::<TreeError>()) {
        Some(Ok(tree)) => InteropError::Tree(*tree),
        Some(Err(other)) => InteropError::io(path, io::Error::other(other)),
        None => InteropError::io(path, io::Error::other("the export failed")),
    }
}
