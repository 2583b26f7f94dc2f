//! Session names that start with `--` in the commands that take many of
//! them (`push`, `pull`, `check`): pi names a session's folder after its
//! working directory, `--home-me-project--`, so `arbor pull
//! --home-me-project--/FILE` names a session, not a flag.
//!
//! A command with one name takes it with clap's `allow_hyphen_values`. A
//! list cannot: clap then takes every later flag (`--to URL`) as one more
//! name. So before clap parses, such a name is moved, with the other names
//! in their order, behind a `--` at the end of the command's arguments,
//! where clap takes everything as a name; the flags stay where they were.
//! Flags are told from names by the command's own definition, and only a
//! word that is no flag of the command and reads as a pi folder (`--…--`,
//! alone or followed by `/…`) counts as a name: a mistyped flag is still
//! refused as one.

use std::ffi::{OsStr, OsString};

/// The commands whose names may start with `--`, each a list.
const LISTS: [&str; 3] = ["push", "pull", "check"];

/// `argv` of the program `root` with the names of a [`LISTS`] command that
/// start with `--` (and the command's other names, in order) moved behind a
/// `--` (see the module docs); unchanged otherwise.
pub fn names_apart(root: &clap::Command, argv: Vec<OsString>) -> Vec<OsString> {
    let Some(at) = command_at(root, &argv) else { return argv };
    let Some(sub) = argv[at].to_str().and_then(|n| root.find_subcommand(n)) else { return argv };
    if !LISTS.contains(&sub.get_name()) {
        return argv;
    }
    let known = |word: &str| flag_of(root, word).or_else(|| flag_of(sub, word));
    let (mut flags, mut names, mut moved) = (vec![], vec![], false);
    let mut rest = argv[at + 1..].iter();
    while let Some(word) = rest.next() {
        let text = word.to_str().unwrap_or_default();
        if text == "--" {
            // Everything after is a name already.
            names.extend(rest.by_ref().cloned());
            break;
        }
        match known(text) {
            Some(takes_value) => {
                flags.push(word.clone());
                if takes_value {
                    flags.extend(rest.next().cloned());
                }
            }
            None if reads_as_folder(word) => {
                names.push(word.clone());
                moved = true;
            }
            None if text.starts_with('-') && text.len() > 1 => flags.push(word.clone()),
            None => names.push(word.clone()),
        }
    }
    if !moved {
        return argv;
    }
    let mut out = argv[..=at].to_vec();
    out.extend(flags);
    out.push("--".into());
    out.extend(names);
    out
}

/// Where the subcommand is in `argv`: the first word that is no global flag or its value.
fn command_at(root: &clap::Command, argv: &[OsString]) -> Option<usize> {
    let mut i = 1;
    while i < argv.len() {
        let text = argv[i].to_str()?;
        match flag_of(root, text) {
            Some(takes_value) => i += if takes_value { 2 } else { 1 },
            None if text.starts_with('-') => return None,
            None => return Some(i),
        }
    }
    None
}

/// Whether `word` is a flag of `cmd` (`--long`, `--long=V`, `-s`), and
/// then whether the next word is its value; `None` when it is no flag of it.
fn flag_of(cmd: &clap::Command, word: &str) -> Option<bool> {
    if let Some(long) = word.strip_prefix("--") {
        let (name, inline) = long.split_once('=').map_or((long, false), |(n, _)| (n, true));
        if name == "help" || name == "version" {
            return Some(false);
        }
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_long() == Some(name) || a.get_all_aliases().is_some_and(|v| v.contains(&name)))?;
        return Some(!inline && arg.get_action().takes_values());
    }
    let mut chars = word.strip_prefix('-')?.chars();
    let c = chars.next()?;
    if c == 'h' || c == 'V' {
        return Some(false);
    }
    let arg = cmd.get_arguments().find(|a| a.get_short() == Some(c))?;
    Some(arg.get_action().takes_values() && chars.as_str().is_empty())
}

/// True for a word that reads as pi's folder of a working directory
/// (`--home-me-project--`), alone or with a path after it.
fn reads_as_folder(word: &OsStr) -> bool {
    let bytes = word.as_encoded_bytes();
    let folder = bytes.split(|&b| b == b'/').next().unwrap_or_default();
    folder.len() > 4 && folder.starts_with(b"--") && folder.ends_with(b"--")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(words: &str) -> String {
        let argv: Vec<OsString> = words.split(' ').map(OsString::from).collect();
        let root = clap::Command::new("arbor")
            .arg(clap::Arg::new("store").long("store"))
            .arg(clap::Arg::new("quiet").short('q').action(clap::ArgAction::SetTrue))
            .subcommands(["push", "pull", "check", "tree"].map(|n| {
                clap::Command::new(n)
                    .arg(clap::Arg::new("to").long("to"))
                    .arg(clap::Arg::new("json").long("json").action(clap::ArgAction::SetTrue))
                    .arg(clap::Arg::new("names").num_args(1..))
            }));
        names_apart(&root, argv).iter().map(|w| w.to_string_lossy().into_owned()).collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn names_that_start_with_dashes_go_behind_a_double_dash() {
        assert_eq!(
            run("arbor --store U pull --a--/f.jsonl --to D b/g.jsonl --json"),
            "arbor --store U pull --to D --json -- --a--/f.jsonl b/g.jsonl"
        );
        assert_eq!(run("arbor push --a-- --to=U"), "arbor push --to=U -- --a--");
        assert_eq!(run("arbor check -- --a--/f"), "arbor check -- --a--/f");
        assert_eq!(run("arbor --store U check --json --a--/f"), "arbor --store U check --json -- --a--/f");
        // Nothing to move, a mistyped flag, another command: as given.
        assert_eq!(run("arbor push f --to U"), "arbor push f --to U");
        assert_eq!(run("arbor push f --jsn"), "arbor push f --jsn");
        assert_eq!(run("arbor tree --a--/f"), "arbor tree --a--/f");
        assert_eq!(run("arbor --bogus push --a--/f"), "arbor --bogus push --a--/f");
    }
}
