//! How a long pass over many sessions reports how far it is: [`Progress`],
//! told by the pass, shown by whoever asked (a progress bar, a footer).

/// Which pass of a refresh is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// Reading sessions for the listing: header, name, counts, first message.
    Listing,
    /// Reading sessions for a search (or its index).
    Text,
}

/// Told how a long pass goes, to show progress; called from the thread that
/// runs the pass. Every method does nothing by default.
pub trait Progress {
    /// A pass begins over `files` sessions holding `bytes` bytes to read.
    fn begin(&self, _pass: Pass, _files: u64, _bytes: u64) {}
    /// One more session is done; `bytes` of it were read.
    fn advance(&self, _bytes: u64) {}
    /// The pass is over.
    fn end(&self) {}
}

/// Progress that goes nowhere.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

impl Progress for NoProgress {}
