//! The CLI's rooms: a command module (`crates/arbor-cli/src/commands/<name>.rs`,
//! or a `commands/<name>/` folder) imports no other command module, and the
//! interactive code (`crates/arbor-cli/src/ui/`) imports none at all. What two
//! of them share belongs in `crate::shared`.
//!
//! The check reads the sources as text: comments, strings and character
//! literals are blanked out, then every path through `crate::commands` or
//! `super` is followed one segment (or one `{…}` group) further.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Problems with the imports of the CLI's command modules and interactive code under `root`.
pub fn check(root: &Path) -> Result<Vec<String>> {
    let src = root.join("crates/arbor-cli/src");
    let commands_dir = src.join("commands");
    let mut problems = Vec::new();
    if !commands_dir.is_dir() {
        problems.push(format!("{}: missing (one module per command)", commands_dir.display()));
        return Ok(problems);
    }
    let names = command_names(&commands_dir)?;
    for file in rust_files(&commands_dir)? {
        let rel = file.strip_prefix(&commands_dir).unwrap_or(&file);
        let mut parts = rel.components();
        let first = parts.next().map(|c| c.as_os_str().to_string_lossy().into_owned()).unwrap_or_default();
        if first == "mod.rs" {
            continue;
        }
        let own = first.trim_end_matches(".rs");
        let text = fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        for other in imported_commands(own, &text, &names) {
            problems.push(format!(
                "{}: command module `{own}` imports command module `{other}` (shared code goes in crate::shared)",
                file.display()
            ));
        }
    }
    let ui = src.join("ui");
    if ui.is_dir() {
        for file in rust_files(&ui)? {
            let text = fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            if names_commands_root(&text) {
                problems.push(format!(
                    "{}: interactive code imports crate::commands (shared code goes in crate::shared)",
                    file.display()
                ));
            }
        }
    }
    Ok(problems)
}

/// The command modules: `commands/<name>.rs` (but `mod.rs`) and `commands/<name>/` folders.
fn command_names(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if path.is_dir() {
            names.push(name);
        } else if let Some(stem) = name.strip_suffix(".rs").filter(|s| *s != "mod") {
            names.push(stem.to_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// Every `.rs` file under `dir`, recursively, sorted.
pub(super) fn rust_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The command modules other than `own` that `source` names through
/// `crate::commands::…` or `super::…` (a sibling, seen from a command module).
pub fn imported_commands(own: &str, source: &str, names: &[String]) -> Vec<String> {
    let code = code_only(source);
    let mut found: Vec<String> = Vec::new();
    for prefix in ["crate::commands::", "super::"] {
        for (at, _) in code.match_indices(prefix) {
            if at > 0 && is_ident_char(code[..at].chars().next_back().unwrap_or(' ')) {
                continue;
            }
            let rest = skip_supers(&code[at + prefix.len()..]);
            for seg in first_segments(rest) {
                if seg != own && names.contains(&seg) && !found.contains(&seg) {
                    found.push(seg);
                }
            }
        }
    }
    found.sort();
    found
}

/// True when `source` names `crate::commands` (any item of it, or the module itself).
pub fn names_commands_root(source: &str) -> bool {
    let code = code_only(source);
    code.match_indices("crate::commands").any(|(at, _)| {
        let before = code[..at].chars().next_back().unwrap_or(' ');
        let after = code[at + "crate::commands".len()..].chars().next().unwrap_or(' ');
        !is_ident_char(before) && !is_ident_char(after)
    })
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `super::super::x` → `x`.
fn skip_supers(mut rest: &str) -> &str {
    while let Some(r) = rest.trim_start().strip_prefix("super::") {
        rest = r;
    }
    rest
}

/// The first segment of a path's rest: `name` of `name::…`, or each
/// top-level name of a `{a, b::c, d as e}` group.
fn first_segments(rest: &str) -> Vec<String> {
    let rest = rest.trim_start();
    let ident = |s: &str| s.trim_start().chars().take_while(|c| is_ident_char(*c)).collect::<String>();
    let Some(group) = rest.strip_prefix('{') else {
        return vec![ident(rest)].into_iter().filter(|s| !s.is_empty()).collect();
    };
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = true;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => start = true,
            c if start && !c.is_whitespace() => {
                start = false;
                let name = ident(&group[i..]);
                if !name.is_empty() {
                    out.push(name);
                }
            }
            _ => {}
        }
    }
    out
}

/// `source` with comments, string literals and character literals blanked
/// out (a space per byte, so byte offsets stay put).
pub fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let blank = |out: &mut String, cs: &[char]| {
        for &c in cs {
            // One space per byte, so byte offsets into the result are the source's.
            out.extend(std::iter::repeat_n(
                if c == '\n' { '\n' } else { ' ' },
                if c == '\n' { 1 } else { c.len_utf8() },
            ));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let end = if c == '/' && next == Some('/') {
            chars[i..].iter().position(|&c| c == '\n').map_or(chars.len(), |p| i + p)
        } else if c == '/' && next == Some('*') {
            block_comment_end(&chars, i)
        } else if c == '"' || (c == 'r' && matches!(next, Some('"' | '#')) && !prev_is_ident(&chars, i)) {
            string_end(&chars, i)
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            char_end(&chars, i)
        } else {
            out.push(c);
            i += 1;
            continue;
        };
        blank(&mut out, &chars[i..end]);
        i = end;
    }
    out
}

fn prev_is_ident(chars: &[char], i: usize) -> bool {
    i > 0 && is_ident_char(chars[i - 1])
}

/// The end (exclusive) of the block comment at `i`; they nest.
pub(super) fn block_comment_end(chars: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < chars.len() {
        if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    chars.len()
}

/// The end (exclusive) of the string literal at `i`: `"…"` with escapes, or a raw `r#"…"#`.
pub(super) fn string_end(chars: &[char], mut i: usize) -> usize {
    if chars[i] == 'r' {
        i += 1;
        let hashes = chars[i..].iter().take_while(|&&c| c == '#').count();
        i += hashes + 1;
        while i < chars.len() {
            if chars[i] == '"' && chars[i + 1..].iter().take(hashes).filter(|&&c| c == '#').count() == hashes {
                return i + 1 + hashes;
            }
            i += 1;
        }
        return chars.len();
    }
    i += 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

/// The end (exclusive) of the character literal at `i` (`'x'`, `'\n'`, `'\u{1F600}'`).
pub(super) fn char_end(chars: &[char], i: usize) -> usize {
    let mut j = i + 1;
    if chars.get(j) == Some(&'\\') {
        j += 2;
    } else {
        j += 1;
    }
    while j < chars.len() && chars[j] != '\'' && chars[j] != '\n' {
        j += 1;
    }
    (j + 1).min(chars.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        ["chat", "context", "fork", "navigate", "tree", "tui"].iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_command_module_importing_another_is_refused() {
        let bad = "use crate::commands::navigate::run;\nuse super::tree;\n";
        assert_eq!(imported_commands("fork", bad, &names()), ["navigate", "tree"]);
        let grouped = "use crate::commands::{navigate::Args as Nav, tree};\nuse super::{context, fork};";
        assert_eq!(imported_commands("fork", grouped, &names()), ["context", "navigate", "tree"]);
        let called = "fn f() { super::super::tui::run(); crate::commands::chat::run(); }";
        assert_eq!(imported_commands("fork", called, &names()), ["chat", "tui"]);
    }

    #[test]
    fn shared_code_itself_and_look_alikes_pass() {
        let good = r##"
            use crate::shared::agent::{navigate, AgentSetup};
            use crate::ui::tui::{self, FilterMode};
            // use crate::commands::tree;  (a comment)
            /* super::navigate in a block comment */
            const HELP: &str = "see crate::commands::tree and super::chat";
            const RAW: &str = r#"super::tui"#;
            fn f<'a>(x: &'a str) -> char { let _ = my_super::tree; '"' }
            mod tests { use super::*; use super::run; }
            use crate::commands::fork::Args;
        "##;
        assert_eq!(imported_commands("fork", good, &names()), Vec::<String>::new());
    }

    #[test]
    fn interactive_code_naming_commands_is_refused() {
        assert!(names_commands_root("use crate::commands::navigate;"));
        assert!(names_commands_root("use crate::commands;"));
        assert!(names_commands_root("let c = crate::commands::Cli::parse();"));
        assert!(!names_commands_root("use crate::commands_helper;\n// crate::commands\nlet s = \"crate::commands\";"));
        assert!(!names_commands_root("use crate::shared::agent::navigate;"));
    }

    #[test]
    fn the_check_fails_on_a_bad_tree_and_passes_on_a_good_one() {
        let dir = std::env::temp_dir().join(format!("xtask-tidy-commands-{}", std::process::id()));
        let src = dir.join("crates/arbor-cli/src");
        let write = |rel: &str, text: &str| {
            let p = src.join(rel);
            fs::create_dir_all(p.parent().unwrap_or(&src)).ok();
            fs::write(&p, text).ok();
        };
        write("commands/mod.rs", "mod fork;\nmod tree;\nmod navigate;\n");
        write("commands/tree.rs", "use crate::shared::output::print_tree;\n");
        write("commands/navigate/mod.rs", "mod print;\n");
        write("commands/navigate/print.rs", "use super::super::tree::Args;\n");
        write("commands/fork.rs", "use crate::commands::navigate;\n");
        write("ui/tui/mod.rs", "use crate::commands::tree::run;\n");
        write("ui/chat/mod.rs", "use crate::shared::agent::load_hooks;\n");
        let problems = check(&dir).unwrap_or_default();
        fs::remove_dir_all(&dir).ok();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("command module `fork` imports command module `navigate`"), "{problems:?}");
        assert!(problems[1].contains("command module `navigate` imports command module `tree`"), "{problems:?}");
        assert!(problems[2].contains("ui/tui/mod.rs: interactive code imports crate::commands"), "{problems:?}");
    }
}
