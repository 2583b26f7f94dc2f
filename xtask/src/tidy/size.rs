//! One room per job: a source file of `crates/*/src` past [`MAX_FILE_LINES`]
//! lines says why at its top (a `// Over 800 lines: <reason>` line among its
//! first lines), and no function is longer than [`MAX_FN_LINES`] lines, from
//! its `fn` line to its closing brace.
//!
//! Functions are found in the text with comments and literals blanked out
//! ([`code_only`]): `fn name`, the first `{` or `;` after it (a `;` first is a
//! declaration without a body), and the matching closing brace.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use super::commands::{code_only, rust_files};

/// The most lines a source file has without a reason at its top.
pub const MAX_FILE_LINES: usize = 800;
/// The most lines a function has.
pub const MAX_FN_LINES: usize = 80;
/// How a long file's reason line starts.
pub const REASON: &str = "// Over 800 lines: ";

/// Problems in the crates under `root`.
pub fn check(root: &Path) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let mut crates: Vec<_> = fs::read_dir(root.join("crates"))?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    crates.sort();
    for dir in crates.iter().filter(|d| d.join("src").is_dir()) {
        for file in rust_files(&dir.join("src"))? {
            let rel = file.strip_prefix(root).unwrap_or(&file).to_string_lossy().replace('\\', "/");
            let text = fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            problems.extend(check_source(&rel, &text));
        }
    }
    Ok(problems)
}

/// The problems of one file, named `rel` in the messages.
pub fn check_source(rel: &str, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let lines = text.lines().count();
    if lines > MAX_FILE_LINES && !has_reason(text) {
        problems.push(format!(
            "{rel}: {lines} lines, over {MAX_FILE_LINES} without a reason (split it, or start it with `{REASON}<why>`)"
        ));
    }
    for (name, line, len) in long_functions(text) {
        problems.push(format!("{rel}:{line}: fn {name} is {len} lines, over {MAX_FN_LINES} (split it)"));
    }
    problems
}

/// True when one of the first five lines is a non-empty [`REASON`] line.
fn has_reason(text: &str) -> bool {
    text.lines().take(5).any(|l| l.strip_prefix(REASON).is_some_and(|r| !r.trim().is_empty()))
}

/// Every function longer than [`MAX_FN_LINES`]: (name, first line, lines).
pub fn long_functions(text: &str) -> Vec<(String, usize, usize)> {
    let code = code_only(text);
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for (at, _) in code.match_indices("fn ") {
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            continue;
        }
        let name: String =
            code[at + 3..].trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if name.is_empty() {
            continue;
        }
        let Some(open) = code[at..].find(['{', ';']).map(|o| at + o) else { continue };
        if bytes[open] == b';' {
            continue;
        }
        let mut depth = 0usize;
        let mut close = code.len();
        for (i, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        close = open + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let first = code[..at].matches('\n').count() + 1;
        let last = code[..close].matches('\n').count() + 1;
        let len = last - first + 1;
        if len > MAX_FN_LINES {
            out.push((name, first, len));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(lines: usize) -> String {
        (0..lines).map(|i| format!("    let x{i} = {i};\n")).collect()
    }

    #[test]
    fn a_long_function_is_refused_and_a_short_one_passes() {
        let text = format!(
            "fn short() {{\n{}}}\n\n/// Docs.\npub(crate) fn long<T: Fn() -> u8>(t: T) -> u8\nwhere\n    T: Copy,\n{{\n{}    let s = \"}}\"; // }}\n    t()\n}}\n",
            body(78),
            body(80)
        );
        // short: 78 + 2 lines; long: fn line, where, bound, `{`, 80, the string, t(), `}`.
        assert_eq!(long_functions(&text), [("long".to_owned(), 83, 87)]);
        let problems = check_source("crates/x/src/a.rs", &text);
        assert_eq!(problems, ["crates/x/src/a.rs:83: fn long is 87 lines, over 80 (split it)"]);
    }

    #[test]
    fn declarations_closures_and_fn_types_are_not_functions() {
        let text = format!("trait T {{\n    fn f(&self);\n}}\ntype F = fn(u8) -> u8;\nfn g() {{\n{}}}\n", body(10));
        assert_eq!(long_functions(&text), Vec::<(String, usize, usize)>::new());
    }

    #[test]
    fn a_long_file_needs_a_reason_at_its_top() {
        let long = "const A: u8 = 1;\n".repeat(801);
        assert_eq!(
            check_source("crates/x/src/big.rs", &long),
            ["crates/x/src/big.rs: 801 lines, over 800 without a reason (split it, or start it with `// Over 800 lines: <why>`)"]
        );
        let with_reason = format!("{REASON}one table, generated by hand.\n//! Docs.\n{long}");
        assert!(check_source("crates/x/src/big.rs", &with_reason).is_empty());
        let empty_reason = format!("{REASON}\n{long}");
        assert_eq!(check_source("crates/x/src/big.rs", &empty_reason).len(), 1);
        assert!(check_source("crates/x/src/small.rs", &"const A: u8 = 1;\n".repeat(800)).is_empty());
    }
}
