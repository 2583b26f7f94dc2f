//! One place in the CLI knows which backends hold sessions: no file of
//! `crates/arbor-cli/src` names a backend crate (`arbor_pg`,
//! `arbor_catalog`) but [`BUILDER`], which builds the one
//! `arbor_tree::sessions::Sessions` every command runs on. So `--store` and
//! local files run the same command code, and a third backend is one more
//! implementation and one line there.
//!
//! The sources are read as text, comments and strings blanked out
//! (`commands::code_only`).

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use super::commands::{code_only, rust_files};

/// The module that builds the backend, relative to the repository.
pub const BUILDER: &str = "crates/arbor-cli/src/shared/backend.rs";

/// The crates only [`BUILDER`] may name.
pub const BACKEND_CRATES: [&str; 2] = ["arbor_pg", "arbor_catalog"];

/// Files of the CLI other than [`BUILDER`] that name a backend crate.
pub fn check(root: &Path) -> Result<Vec<String>> {
    let src = root.join("crates/arbor-cli/src");
    let mut problems = Vec::new();
    if !src.is_dir() {
        return Ok(problems);
    }
    for file in rust_files(&src)? {
        if file.strip_prefix(root).is_ok_and(|rel| rel == Path::new(BUILDER)) {
            continue;
        }
        let text = fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        for krate in named_backends(&text) {
            problems.push(format!(
                "{}: names {krate}; only {BUILDER} knows the backends (use the `Sessions` it builds)",
                file.display()
            ));
        }
    }
    Ok(problems)
}

/// The backend crates `source` names in its code (not in comments or strings).
pub fn named_backends(source: &str) -> Vec<&'static str> {
    let code = code_only(source);
    BACKEND_CRATES
        .into_iter()
        .filter(|krate| {
            code.match_indices(krate).any(|(at, _)| {
                let before = code[..at].chars().next_back().unwrap_or(' ');
                let after = code[at + krate.len()..].chars().next().unwrap_or(' ');
                !is_ident(before) && !is_ident(after)
            })
        })
        .collect()
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naming_a_backend_crate_is_refused_and_look_alikes_pass() {
        assert_eq!(named_backends("use arbor_pg::PgStore;"), ["arbor_pg"]);
        assert_eq!(named_backends("fn f() { let s = ::arbor_pg::PgStore::connect(u); }"), ["arbor_pg"]);
        assert_eq!(named_backends("use arbor_catalog::{Catalog, Scope};"), ["arbor_catalog"]);
        assert_eq!(
            named_backends("extern crate arbor_pg as pg;\nuse arbor_catalog as c;"),
            ["arbor_pg", "arbor_catalog"]
        );
        let good = r#"
            // arbor_pg in a comment, /* arbor_catalog */ in a block
            const HELP: &str = "see arbor_pg";
            use my_arbor_pg_helpers::x;
            use arbor_pgx::y;
            use arbor_tree::sessions::Sessions;
        "#;
        assert!(named_backends(good).is_empty(), "{:?}", named_backends(good));
    }

    #[test]
    fn the_check_fails_on_a_bad_tree_and_passes_on_a_good_one() {
        let dir = std::env::temp_dir().join(format!("xtask-tidy-backends-{}", std::process::id()));
        let write = |rel: &str, text: &str| {
            let p = dir.join(rel);
            fs::create_dir_all(p.parent().unwrap_or(&dir)).ok();
            fs::write(&p, text).ok();
        };
        write(BUILDER, "use arbor_pg::PgStore;\nuse arbor_catalog::FileSessions;\n");
        write("crates/arbor-cli/src/commands/ls.rs", "use arbor_tree::sessions::Sessions;\n");
        assert_eq!(check(&dir).ok(), Some(vec![]));
        write("crates/arbor-cli/src/commands/ls.rs", "fn f(s: &arbor_pg::PgStore) { if g.server().is_some() {} }\n");
        let problems = check(&dir).unwrap_or_default();
        let _ = fs::remove_dir_all(&dir);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("ls.rs: names arbor_pg"), "{problems:?}");
    }
}
