//! The interactive front ends: the tree selector of `arbor tui` ([`tui`]),
//! `arbor chat` ([`chat`]), which opens the same selectors over its own
//! session, the session picker both open without a file ([`picker`]), and
//! what they share to own a terminal ([`terminal`]).
//!
//! Nothing here imports a command module; what a command and a front end
//! both run (opening an agent session, navigate, fork) is in `crate::shared`.

pub mod chat;
pub mod picker;
pub mod terminal;
pub mod tui;
