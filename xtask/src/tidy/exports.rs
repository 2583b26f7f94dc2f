//! A narrow front door (issue 37): each library crate names at most
//! [`MAX_ROOT_EXPORTS`] items at its root, what a newcomer starts from; the
//! rest lives in well-named public modules.
//!
//! Counted from the text of each `crates/*/src/lib.rs` (comments and
//! strings blanked out, `commands::code_only`): every name a top-level
//! `pub use` brings in (its alias when renamed; a glob is refused, since
//! it hides how many it brings) and every item a top-level `pub fn`,
//! `struct`, `enum`, `trait`, `type`, `const`, `static` or `union` defines.
//! Public modules are not counted: they are where the rest goes.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use super::commands::code_only;
use super::DEV_ONLY;

/// The most items a library crate's root may name.
pub const MAX_ROOT_EXPORTS: usize = 30;

/// The crates under `crates/` with a `src/lib.rs`, but for test support, whose root names too much.
pub fn check(root: &Path) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let Ok(dirs) = fs::read_dir(root.join("crates")) else { return Ok(problems) };
    let mut libs: Vec<_> = dirs.filter_map(|d| d.ok()).map(|d| d.path().join("src/lib.rs")).collect();
    libs.sort();
    for lib in libs.into_iter().filter(|l| l.is_file()) {
        let name = lib.parent().and_then(Path::parent).and_then(Path::file_name);
        let name = name.map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if DEV_ONLY.contains(&name.as_str()) {
            continue;
        }
        let text = fs::read_to_string(&lib).with_context(|| format!("reading {}", lib.display()))?;
        problems.extend(problems_of(&name, &text));
    }
    Ok(problems)
}

/// The problems of crate `name`'s root, whose source is `lib`.
pub fn problems_of(name: &str, lib: &str) -> Vec<String> {
    let exports = root_exports(lib);
    let mut problems = Vec::new();
    if exports.iter().any(|e| e == "*") {
        problems.push(format!("{name}: a glob `pub use` at the crate root (name what it exports)"));
    }
    if exports.len() > MAX_ROOT_EXPORTS {
        problems.push(format!(
            "{name}: {} items named at the crate root, more than {MAX_ROOT_EXPORTS}; move the rest into public modules",
            exports.len()
        ));
    }
    problems
}

/// The names crate root `lib` exports (`*` for a glob), in order.
pub fn root_exports(lib: &str) -> Vec<String> {
    let code = code_only(lib);
    let mut names = Vec::new();
    let mut rest = code.as_str();
    while !rest.is_empty() {
        // Only unindented statements belong to the root (not inline modules).
        let line_end = rest.find('\n').map_or(rest.len(), |p| p + 1);
        let line = &rest[..line_end];
        if line.starts_with("pub use ") {
            let start = code.len() - rest.len() + "pub use ".len();
            let end = code[start..].find(';').map_or(code.len(), |p| start + p);
            names.extend(use_tree_names(&code[start..end]));
            rest = code.get(end + 1..).unwrap_or_default();
            continue;
        }
        if let Some(name) = item_name(line) {
            names.push(name);
        }
        rest = &rest[line_end..];
    }
    names
}

/// The item a top-level `pub` line defines, if it defines one the root names.
fn item_name(line: &str) -> Option<String> {
    let mut words = line.strip_prefix("pub ")?.split(|c: char| !(c.is_alphanumeric() || c == '_'));
    let mut word = words.next()?;
    while matches!(word, "" | "async" | "unsafe" | "const" | "extern" | "mut") {
        // `pub const fn`, `pub const NAME`: a const followed by a name is the item.
        if word == "const" {
            let next = words.clone().find(|w| !w.is_empty())?;
            if next != "fn" && next != "unsafe" {
                return Some(next.to_owned());
            }
        }
        word = words.next()?;
    }
    match word {
        "fn" | "struct" | "enum" | "trait" | "type" | "static" | "union" => {
            words.find(|w| !w.is_empty() && *w != "mut").map(str::to_owned)
        }
        _ => None,
    }
}

/// The names a use tree (what follows `pub use`, up to its `;`) brings in.
fn use_tree_names(tree: &str) -> Vec<String> {
    let compact: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut names = Vec::new();
    // Split into leaves at the top-level of each brace group: the last
    // segment of a leaf (or its alias) is the name.
    let mut leaf = String::new();
    let mut leaves = Vec::new();
    for c in compact.chars() {
        match c {
            '{' => leaf.clear(),
            '}' | ',' => leaves.push(std::mem::take(&mut leaf)),
            _ => leaf.push(c),
        }
    }
    leaves.push(leaf);
    for leaf in leaves {
        let leaf = leaf.trim();
        if leaf.is_empty() || leaf.ends_with("::") {
            continue;
        }
        let name = match leaf.rsplit_once(" as ") {
            Some((_, alias)) => alias.trim(),
            None => leaf.rsplit("::").next().unwrap_or(leaf).trim(),
        };
        if name != "_" {
            names.push(name.to_owned());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_every_name_a_root_brings_in() {
        let lib = "//! Doc.\n\nmod a;\npub mod plan;\n\
            pub use a::{b, c::{D, E as F}, self};\n\
            pub use g::H; // pub use x::Y;\n\
            pub use arbor_log as log;\n\
            pub fn f() {}\npub const N: usize = 1;\npub(crate) fn hidden() {}\n\
            mod inner {\n    pub use z::Q;\n    pub fn nested() {}\n}\n\
            pub struct S;\npub async fn go() {}\n";
        assert_eq!(root_exports(lib), ["b", "D", "F", "self", "H", "log", "f", "N", "S", "go"]);
    }

    #[test]
    fn fails_a_crate_past_thirty_naming_it() {
        let names: Vec<String> = (0..MAX_ROOT_EXPORTS).map(|i| format!("N{i}")).collect();
        let lib = format!("//! Doc.\npub use a::{{{}}};\n", names.join(", "));
        assert!(problems_of("arbor-x", &lib).is_empty());
        let problems = problems_of("arbor-x", &format!("{lib}pub fn one_more() {{}}\n"));
        assert_eq!(problems.len(), 1);
        assert!(problems[0].starts_with("arbor-x: 31 items named at the crate root"), "{problems:?}");
        assert_eq!(problems_of("arbor-x", "pub use a::*;\n").len(), 1);
    }
}
