//! `arbor tree`'s text, drawn by `arbor_interop::tree` with the paths in
//! rows shortened to `~` under the home directory (CLI policy).

use std::io::Write;

use anyhow::Result;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

use arbor_tree::Session;

pub use arbor_interop::tree::{FilterMode, TreeText};

use super::output::home;

/// Writes the tree of `s` as `arbor tree` does; `opts.home` (when unset) is
/// the user's home directory.
pub fn print_tree(s: &Session, opts: &TreeText, out: &mut dyn Write) -> Result<()> {
    let mut opts = opts.clone();
    if opts.home.is_none() {
        opts.home = home();
    }
    arbor_interop::tree::print_tree(s, &opts, out)?;
    Ok(())
}

/// `--filter`'s values (`arbor tree`, `arbor tui`): the selector's modes by
/// name, each with what it shows.
pub fn filter_modes() -> impl TypedValueParser<Value = FilterMode> {
    let help = |m: FilterMode| match m {
        FilterMode::Default => "Everything but settings entries",
        FilterMode::NoTools => "Default minus tool results",
        FilterMode::UserOnly => "Only user messages",
        FilterMode::LabeledOnly => "Only labelled entries",
        FilterMode::All => "Every entry",
    };
    PossibleValuesParser::new(FilterMode::NAMES.map(|(name, m)| PossibleValue::new(name).help(help(m))))
        .map(|name| FilterMode::named(&name).unwrap_or_default())
}
