//! Following a session while others write it: [`Follow::wait`] hands out
//! what arrived, whole lines only, as a file's bytes.

use std::fmt;
use std::time::Duration;

use super::SessionsError;

/// Where following starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowFrom {
    /// The whole session is handed out first, then what arrives.
    Start,
    /// Only what arrives after following started.
    End,
}

/// What a wait brought.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Followed {
    /// Whole lines appended since the last delivery, as a file's bytes.
    Lines(Vec<u8>),
    /// The session was replaced whole (a migration's rewrite, a file cut
    /// short or swapped for another, a session that came back): all of it
    /// again.
    Replaced(Vec<u8>),
    /// The session is no longer there (its file deleted or moved away, its
    /// row removed). Said once; following goes on, and a session that comes
    /// back under the same name is handed out whole ([`Followed::Replaced`]).
    Gone,
    /// Nothing new within the time given.
    Idle,
}

/// A session being followed (from [`super::Sessions::follow`]).
pub trait Follow: Send + fmt::Debug {
    /// Waits up to `timeout` for what arrives; [`Followed::Idle`] when
    /// nothing did.
    fn wait(&mut self, timeout: Duration) -> Result<Followed, SessionsError>;
}
