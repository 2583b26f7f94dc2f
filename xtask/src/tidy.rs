//! `cargo xtask tidy`: structural checks over `cargo metadata` and the crate sources.
//!
//! The checks are pure functions over the metadata JSON (and file texts), so the
//! unit tests below can feed them synthetic graphs and prove that a bad edge is
//! caught, rather than trusting a check that has only ever passed.

use std::collections::{HashMap, VecDeque};
use std::fs;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::Value;

mod backends;
mod commands;
mod exports;
mod readme;
mod size;
mod vocab;

/// The crate chain, bottom layer first: a crate may depend only on crates of
/// the layers below its own (crates side by side in a layer know nothing of
/// each other).
pub const LAYERS: [&[&str]; 8] = [
    &["arbor-log"],
    &["arbor-tree"],
    &["arbor-search"],
    &["arbor-context", "arbor-catalog", "arbor-pg"],
    &["arbor-agent", "arbor-interop"],
    &["arbor-usage", "arbor-mcp"],
    &["arbor-serve"],
    &["arbor-cli", "arbor-py"],
];

/// Crates from which `tokio` must not be reachable through normal dependencies
/// (the Python package too: a wheel that runs no async runtime).
pub const SYNC_CRATES: [&str; 8] = [
    "arbor-log",
    "arbor-tree",
    "arbor-search",
    "arbor-context",
    "arbor-catalog",
    "arbor-interop",
    "arbor-usage",
    "arbor-py",
];

/// Every chain crate, bottom layer first.
fn chain_crates() -> impl Iterator<Item = &'static str> {
    LAYERS.iter().flat_map(|layer| layer.iter().copied())
}

/// The chain drawn top first, `a | b` for crates side by side.
fn chain_text() -> String {
    LAYERS.iter().rev().map(|layer| layer.join(" | ")).collect::<Vec<_>>().join(" -> ")
}

/// Crates that exist for tests only: any crate may use them, as a dev-dependency only.
pub const DEV_ONLY: [&str; 1] = ["arbor-test-support"];

/// Every problem the checks find in the workspace at `root` (what `cargo
/// xtask tidy` reports, and what the test below requires to be none).
pub fn problems(root: &Path) -> Result<Vec<String>> {
    let meta = crate::cargo_metadata(root, false)?;
    let mut problems = check_chain(&meta)?;
    problems.extend(check_no_tokio(&meta)?);
    problems.extend(check_dev_only(&meta)?);
    problems.extend(check_crate_files(&meta, root)?);
    problems.extend(commands::check(root)?);
    problems.extend(backends::check(root)?);
    problems.extend(exports::check(root)?);
    problems.extend(vocab::check(root)?);
    problems.extend(size::check(root)?);
    problems.extend(readme::check(root)?);
    Ok(problems)
}

pub fn run(root: &Path) -> Result<()> {
    let problems = problems(root)?;
    if !problems.is_empty() {
        for p in &problems {
            eprintln!("tidy: {p}");
        }
        bail!("tidy found {} problem(s)", problems.len());
    }
    println!(
        "tidy: ok ({} layered, no tokio under {}, {} dev-only, crate lints and docs present, CLI commands apart, backends built in one place, at most {} root exports a library crate, entry types and roles as types, files and functions in size)",
        chain_text(),
        SYNC_CRATES.join("/"),
        DEV_ONLY.join("/"),
        exports::MAX_ROOT_EXPORTS
    );
    Ok(())
}

/// The layer of a chain crate.
fn rank(name: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&name))
}

fn str_field<'a>(v: &'a Value, key: &str) -> Result<&'a str> {
    v.get(key).and_then(Value::as_str).with_context(|| format!("cargo metadata: missing string field {key:?}"))
}

fn array_field<'a>(v: &'a Value, key: &str) -> Result<&'a [Value]> {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .with_context(|| format!("cargo metadata: missing array field {key:?}"))
}

/// The workspace members' package objects, by name.
fn members(meta: &Value) -> Result<HashMap<String, &Value>> {
    let ids: Vec<&str> = array_field(meta, "workspace_members")?.iter().filter_map(Value::as_str).collect();
    let mut out = HashMap::new();
    for pkg in array_field(meta, "packages")? {
        if ids.contains(&str_field(pkg, "id")?) {
            out.insert(str_field(pkg, "name")?.to_owned(), pkg);
        }
    }
    Ok(out)
}

/// Every chain crate must exist, and its normal dependencies may only be chain
/// crates of lower layers (other crates are not restricted here).
pub fn check_chain(meta: &Value) -> Result<Vec<String>> {
    let members = members(meta)?;
    let mut problems = Vec::new();
    for name in chain_crates() {
        let own_rank = rank(name).unwrap_or_default();
        let Some(pkg) = members.get(name) else {
            problems.push(format!("chain crate {name} is not a workspace member"));
            continue;
        };
        for dep in array_field(pkg, "dependencies")? {
            let normal = dep.get("kind").is_none_or(Value::is_null);
            let dep_name = str_field(dep, "name")?;
            if let (true, Some(dep_rank)) = (normal, rank(dep_name)) {
                if dep_rank >= own_rank {
                    problems.push(format!(
                        "{name} depends on {dep_name}, which is not below it in the chain {}",
                        chain_text()
                    ));
                }
            }
        }
    }
    Ok(problems)
}

/// A [`DEV_ONLY`] crate is never a normal or build dependency of a workspace
/// member (so no library or binary can ship test helpers).
pub fn check_dev_only(meta: &Value) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let mut members: Vec<(String, &Value)> = members(meta)?.into_iter().collect();
    members.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, pkg) in members {
        for dep in array_field(pkg, "dependencies")? {
            let dep_name = str_field(dep, "name")?;
            let kind = dep.get("kind").and_then(Value::as_str);
            if DEV_ONLY.contains(&dep_name) && kind != Some("dev") {
                problems.push(format!(
                    "{name} depends on {dep_name} as a {} dependency; it is for tests only (a dev-dependency)",
                    kind.unwrap_or("normal")
                ));
            }
        }
    }
    Ok(problems)
}

/// `tokio` must not be reachable from [`SYNC_CRATES`] through normal
/// dependencies of the resolve graph. The graph is feature-unified over the
/// workspace, so this errs on the strict side.
pub fn check_no_tokio(meta: &Value) -> Result<Vec<String>> {
    let resolve = meta.get("resolve").filter(|r| !r.is_null()).context("cargo metadata has no resolve graph")?;
    let mut names: HashMap<&str, &str> = HashMap::new();
    for pkg in array_field(meta, "packages")? {
        names.insert(str_field(pkg, "id")?, str_field(pkg, "name")?);
    }
    let mut edges: HashMap<&str, Vec<&str>> = HashMap::new();
    for node in array_field(resolve, "nodes")? {
        let mut out = Vec::new();
        for dep in array_field(node, "deps")? {
            let kinds = array_field(dep, "dep_kinds")?;
            if kinds.iter().any(|k| k.get("kind").is_none_or(Value::is_null)) {
                out.push(str_field(dep, "pkg")?);
            }
        }
        edges.insert(str_field(node, "id")?, out);
    }
    let members = members(meta)?;
    let mut problems = Vec::new();
    for name in SYNC_CRATES {
        let Some(pkg) = members.get(name) else {
            problems.push(format!("crate {name} is not a workspace member"));
            continue;
        };
        let start = str_field(pkg, "id")?;
        // Breadth-first, remembering how each package was reached to print the path.
        let mut came_from: HashMap<&str, &str> = HashMap::from([(start, start)]);
        let mut queue = VecDeque::from([start]);
        while let Some(id) = queue.pop_front() {
            if names.get(id) == Some(&"tokio") {
                let mut path = vec![names.get(id).copied().unwrap_or(id)];
                let mut cur = id;
                while cur != start {
                    cur = came_from.get(cur).copied().unwrap_or(start);
                    path.push(names.get(cur).copied().unwrap_or(cur));
                }
                path.reverse();
                problems.push(format!("tokio is reachable from {name}: {}", path.join(" -> ")));
                break;
            }
            for next in edges.get(id).map(Vec::as_slice).unwrap_or_default() {
                if !came_from.contains_key(next) {
                    came_from.insert(next, id);
                    queue.push_back(next);
                }
            }
        }
    }
    Ok(problems)
}

/// Every package under `crates/` has `[lints] workspace = true`, a folder named
/// after it, and lib/bin roots that open with a `//!` doc (a library's denies
/// `missing_docs`, but for test support's); every folder under
/// `crates/` with a manifest is a workspace member.
pub fn check_crate_files(meta: &Value, root: &Path) -> Result<Vec<String>> {
    let crates_dir = root.join("crates");
    let mut problems = Vec::new();
    let mut seen_dirs = Vec::new();
    for pkg in members(meta)?.values() {
        let manifest = Path::new(str_field(pkg, "manifest_path")?);
        let Ok(rel) = manifest.strip_prefix(&crates_dir) else { continue };
        let name = str_field(pkg, "name")?;
        let dir = rel.parent().map(Path::to_path_buf).unwrap_or_default();
        seen_dirs.push(dir.clone());
        if dir != Path::new(name) {
            problems.push(format!("crate {name} lives in crates/{}, not crates/{name}", dir.display()));
        }
        let text = fs::read_to_string(manifest).with_context(|| format!("reading {}", manifest.display()))?;
        if !has_workspace_lints(&text) {
            problems.push(format!("{}: missing `[lints] workspace = true`", manifest.display()));
        }
        for target in array_field(pkg, "targets")? {
            let kinds = array_field(target, "kind")?;
            let is_root = kinds.iter().filter_map(Value::as_str).any(|k| matches!(k, "lib" | "bin" | "proc-macro"));
            if !is_root {
                continue;
            }
            let src = Path::new(str_field(target, "src_path")?);
            let text = fs::read_to_string(src).with_context(|| format!("reading {}", src.display()))?;
            if !starts_with_crate_doc(&text) {
                problems.push(format!("{}: does not start with a `//!` crate doc", src.display()));
            }
            // Every library crate documents every public item (issue 37).
            let is_lib = kinds.iter().any(|k| k.as_str() == Some("lib"));
            if is_lib && !DEV_ONLY.contains(&name) && !text.contains("#![deny(missing_docs)]") {
                problems.push(format!("{}: a library crate without `#![deny(missing_docs)]`", src.display()));
            }
        }
    }
    if let Ok(entries) = fs::read_dir(&crates_dir) {
        for entry in entries {
            let entry = entry?;
            let dir = entry.file_name();
            if entry.path().join("Cargo.toml").is_file() && !seen_dirs.iter().any(|d| d.as_os_str() == dir) {
                problems
                    .push(format!("crates/{} has a Cargo.toml but is not a workspace member", dir.to_string_lossy()));
            }
        }
    }
    Ok(problems)
}

/// True when a manifest opts into the workspace lints: `[lints]` with
/// `workspace = true`, or the dotted/inline forms at the top level.
pub fn has_workspace_lints(manifest: &str) -> bool {
    let mut table: Option<String> = None;
    for line in manifest.lines() {
        let line = line.split('#').next().unwrap_or_default();
        let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        if compact.starts_with('[') {
            table = Some(compact);
            continue;
        }
        let hit = match table.as_deref() {
            Some("[lints]") => compact == "workspace=true",
            None => {
                compact == "lints.workspace=true"
                    || (compact.starts_with("lints={") && compact.contains("workspace=true"))
            }
            Some(_) => false,
        };
        if hit {
            return true;
        }
    }
    false
}

/// True when a crate root opens with a `//!` doc comment (blank lines before it allowed).
pub fn starts_with_crate_doc(source: &str) -> bool {
    source.trim_start_matches('\u{feff}').trim_start().starts_with("//!")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id(name: &str) -> String {
        if rank(name).is_some() {
            format!("path+file:///ws/crates/{name}#0.1.0")
        } else {
            format!("registry+https://github.com/rust-lang/crates.io-index#{name}@1.0.0")
        }
    }

    /// Metadata for the chain crates plus whatever `edges` mention;
    /// an edge is (from, to, kind) with kind `None` for a normal dependency.
    fn fake_meta(edges: &[(&str, &str, Option<&str>)]) -> Value {
        let mut names: Vec<&str> = chain_crates().collect();
        for (a, b, _) in edges {
            for n in [*a, *b] {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        let packages: Vec<Value> = names
            .iter()
            .map(|n| {
                let deps: Vec<Value> = edges
                    .iter()
                    .filter(|(a, _, _)| a == n)
                    .map(|(_, b, k)| json!({"name": b, "kind": k, "source": null}))
                    .collect();
                json!({
                    "name": n,
                    "id": id(n),
                    "dependencies": deps,
                    "manifest_path": format!("/ws/crates/{n}/Cargo.toml"),
                    "targets": [],
                })
            })
            .collect();
        let nodes: Vec<Value> = names
            .iter()
            .map(|n| {
                let deps: Vec<Value> = edges
                    .iter()
                    .filter(|(a, _, _)| a == n)
                    .map(|(_, b, k)| json!({"name": b, "pkg": id(b), "dep_kinds": [{"kind": k, "target": null}]}))
                    .collect();
                json!({"id": id(n), "deps": deps})
            })
            .collect();
        let members: Vec<String> = chain_crates().map(id).collect();
        json!({"packages": packages, "workspace_members": members, "resolve": {"nodes": nodes, "root": null}})
    }

    fn good_chain() -> Vec<(&'static str, &'static str, Option<&'static str>)> {
        vec![
            ("arbor-cli", "arbor-agent", None),
            ("arbor-cli", "arbor-log", None),
            ("arbor-agent", "arbor-context", None),
            ("arbor-agent", "tokio", None),
            ("arbor-context", "arbor-tree", None),
            ("arbor-catalog", "arbor-tree", None),
            ("arbor-catalog", "rusqlite", None),
            ("arbor-pg", "arbor-tree", None),
            ("arbor-pg", "tokio", None),
            ("arbor-interop", "arbor-context", None),
            ("arbor-tree", "arbor-log", None),
            ("arbor-log", "serde_json", None),
            ("serde_json", "itoa", None),
        ]
    }

    #[test]
    fn the_workspace_is_tidy() {
        // What `cargo xtask tidy` checks, as a test, so `cargo test` enforces what CI enforces.
        let root = crate::workspace_root().unwrap();
        assert_eq!(problems(&root).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn test_support_only_as_a_dev_dependency() {
        let mut edges = good_chain();
        edges.push(("arbor-tree", "arbor-test-support", Some("dev")));
        edges.push(("arbor-cli", "arbor-test-support", Some("dev")));
        assert!(check_dev_only(&fake_meta(&edges)).unwrap().is_empty());
        edges.push(("arbor-context", "arbor-test-support", None));
        edges.push(("arbor-log", "arbor-test-support", Some("build")));
        assert_eq!(
            check_dev_only(&fake_meta(&edges)).unwrap(),
            vec![
                "arbor-context depends on arbor-test-support as a normal dependency; it is for tests only (a dev-dependency)",
                "arbor-log depends on arbor-test-support as a build dependency; it is for tests only (a dev-dependency)",
            ]
        );
    }

    #[test]
    fn a_clean_chain_passes() {
        let meta = fake_meta(&good_chain());
        assert_eq!(check_chain(&meta).unwrap(), Vec::<String>::new());
        assert_eq!(check_no_tokio(&meta).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn an_upward_edge_is_detected() {
        let mut edges = good_chain();
        edges.push(("arbor-log", "arbor-tree", None));
        let problems = check_chain(&fake_meta(&edges)).unwrap();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("arbor-log depends on arbor-tree"), "{problems:?}");
    }

    #[test]
    fn an_edge_to_the_top_and_a_self_edge_are_detected() {
        let mut edges = good_chain();
        edges.push(("arbor-context", "arbor-cli", None));
        edges.push(("arbor-agent", "arbor-agent", None));
        let problems = check_chain(&fake_meta(&edges)).unwrap();
        assert_eq!(problems.len(), 2, "{problems:?}");
    }

    #[test]
    fn upward_dev_dependencies_are_not_layering_errors() {
        let mut edges = good_chain();
        edges.push(("arbor-log", "arbor-tree", Some("dev")));
        assert!(check_chain(&fake_meta(&edges)).unwrap().is_empty());
    }

    #[test]
    fn a_missing_chain_crate_is_a_problem() {
        let mut meta = fake_meta(&good_chain());
        meta["workspace_members"] = json!([id("arbor-log")]);
        assert_eq!(check_chain(&meta).unwrap().len(), chain_crates().count() - 1);
    }

    #[test]
    fn crates_side_by_side_may_not_depend_on_each_other() {
        let side_by_side = [
            ("arbor-catalog", "arbor-context"),
            ("arbor-context", "arbor-catalog"),
            ("arbor-pg", "arbor-catalog"),
            ("arbor-catalog", "arbor-pg"),
            ("arbor-py", "arbor-cli"),
            ("arbor-cli", "arbor-py"),
        ];
        for (a, b) in side_by_side {
            let mut edges = good_chain();
            edges.push((a, b, None));
            let problems = check_chain(&fake_meta(&edges)).unwrap();
            assert_eq!(problems.len(), 1, "{problems:?}");
            assert!(problems[0].starts_with(&format!("{a} depends on {b}")), "{problems:?}");
            assert!(
                problems[0]
                    .ends_with("arbor-context | arbor-catalog | arbor-pg -> arbor-search -> arbor-tree -> arbor-log"),
                "{problems:?}"
            );
        }
        let mut edges = good_chain();
        edges.push(("arbor-agent", "arbor-catalog", None));
        edges.push(("arbor-cli", "arbor-pg", None));
        assert!(check_chain(&fake_meta(&edges)).unwrap().is_empty());
    }

    #[test]
    fn tokio_under_the_catalog_is_detected() {
        let mut edges = good_chain();
        edges.push(("rusqlite", "tokio", None));
        let problems = check_no_tokio(&fake_meta(&edges)).unwrap();
        assert_eq!(problems, vec!["tokio is reachable from arbor-catalog: arbor-catalog -> rusqlite -> tokio"]);
    }

    #[test]
    fn tokio_under_the_python_package_is_detected() {
        let mut edges = good_chain();
        edges.push(("arbor-py", "arbor-catalog", None));
        assert!(check_no_tokio(&fake_meta(&edges)).unwrap().is_empty());
        edges.push(("arbor-py", "arbor-agent", None));
        assert!(check_chain(&fake_meta(&edges)).unwrap().is_empty(), "the agent is below it in the chain");
        let problems = check_no_tokio(&fake_meta(&edges)).unwrap();
        assert_eq!(problems, vec!["tokio is reachable from arbor-py: arbor-py -> arbor-agent -> tokio"]);
    }

    #[test]
    fn tokio_reachable_transitively_is_detected() {
        let mut edges = good_chain();
        edges.push(("arbor-tree", "helper", None));
        edges.push(("helper", "tokio", None));
        let problems = check_no_tokio(&fake_meta(&edges)).unwrap();
        // arbor-tree reaches it directly, the crates above it through it.
        assert_eq!(
            problems,
            vec![
                "tokio is reachable from arbor-tree: arbor-tree -> helper -> tokio",
                "tokio is reachable from arbor-context: arbor-context -> arbor-tree -> helper -> tokio",
                "tokio is reachable from arbor-catalog: arbor-catalog -> arbor-tree -> helper -> tokio",
                "tokio is reachable from arbor-interop: arbor-interop -> arbor-context -> arbor-tree -> helper -> tokio",
            ]
        );
    }

    #[test]
    fn tokio_as_a_dev_dependency_of_a_lower_crate_is_allowed() {
        let mut edges = good_chain();
        edges.push(("arbor-log", "tokio", Some("dev")));
        edges.push(("arbor-tree", "tokio", Some("build")));
        assert!(check_no_tokio(&fake_meta(&edges)).unwrap().is_empty());
    }

    #[test]
    fn metadata_without_resolve_is_an_error_not_a_pass() {
        let mut meta = fake_meta(&good_chain());
        meta["resolve"] = Value::Null;
        assert!(check_no_tokio(&meta).is_err());
    }

    #[test]
    fn workspace_lints_forms() {
        assert!(has_workspace_lints("[package]\nname = \"x\"\n\n[lints]\nworkspace = true\n"));
        assert!(has_workspace_lints("[lints]\n  workspace=true # inherit\n[dependencies]\n"));
        assert!(has_workspace_lints("lints.workspace = true\n[package]\n"));
        assert!(has_workspace_lints("lints = { workspace = true }\n"));
        assert!(!has_workspace_lints("[package]\nworkspace = true\n"));
        assert!(!has_workspace_lints("[lints]\nworkspace = false\n"));
        assert!(!has_workspace_lints("[lints.rust]\nunsafe_code = \"forbid\"\n"));
        assert!(!has_workspace_lints("# [lints]\n# workspace = true\n"));
    }

    #[test]
    fn crate_doc_check() {
        assert!(starts_with_crate_doc("//! Owns things.\n\nmod a;\n"));
        assert!(starts_with_crate_doc("\n//! Owns things.\n"));
        assert!(!starts_with_crate_doc("fn main() {}\n"));
        assert!(!starts_with_crate_doc("// not a doc\n//! late\n"));
        assert!(!starts_with_crate_doc("/// item doc\n"));
    }
}
