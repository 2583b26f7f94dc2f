//! What commands and the interactive front ends both use, and nothing that
//! runs a command: the global flags and how a session is opened
//! ([`session`]), the one place that builds the backend the sessions live
//! in ([`backend`]; [`background`] for the search filters' builder), the model and hook arguments and the agent flows run
//! on a small runtime ([`agent`]), the providers and the choice of a model
//! ([`models`]), session names that start with `--` in a list of them
//! ([`names`]), output written once from a server's session ([`held`]), and how results are printed ([`output`]; [`tree_text`]
//! for the tree, drawn by `arbor_interop::tree`, whose [`forest`],
//! [`filter`] and [`layout`] the tree selector uses too;
//! [`progress`] for a spinner or a progress bar while something slow runs;
//! [`visible`] for text from files on a terminal).
//!
//! Nothing here imports a command module or the interactive code.

pub mod agent;
pub mod backend;
pub mod background;
pub mod held;
pub mod models;
pub mod names;
pub mod output;
pub mod progress;
pub mod session;
pub mod tree_text;
pub mod visible;

pub use arbor_interop::tree::{filter, forest, layout};
