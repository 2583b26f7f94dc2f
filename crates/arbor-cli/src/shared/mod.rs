//! What commands and the interactive front ends both use, and nothing that
//! runs a command: the global flags and how a session is opened
//! ([`session`]), the one place that builds the backend the sessions live
//! in ([`backend`]), the model and hook arguments and the agent flows run
//! on a small runtime ([`agent`]), the providers and the choice of a model
//! ([`models`]), and how results are printed ([`output`]; [`forest`],
//! [`filter`], [`layout`], [`tree_walk`] and [`tree_text`] for the tree;
//! [`progress`] for a spinner or a progress bar while something slow runs;
//! [`visible`] for text from files on a terminal).
//!
//! Nothing here imports a command module or the interactive code.

pub mod agent;
pub mod backend;
pub mod filter;
pub mod forest;
pub mod layout;
pub mod models;
pub mod output;
pub mod progress;
pub mod session;
pub mod tree_text;
pub mod tree_walk;
pub mod visible;
