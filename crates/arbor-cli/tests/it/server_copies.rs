//! Local copies of large sessions read from a server, through the CLI
//! (docs/postgres.md, "Local copies of what was read"): `tree --json` of a
//! session of 8 MiB or more leaves a copy in `<cache>/copies/`, the next one
//! prints the same from it, `ARBOR_STORE_COPIES_MB=0` keeps none, a budget
//! that is not a number is one line naming the variable, and `arbor cache
//! clear` removes the copies.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use arbor_test_support::pg::TestDb;

use crate::{stderr, stdout};

/// `arbor ARGS` in `dir` with the cache `cache`, on the server `url` when given, `env` set.
fn arbor(url: Option<&str>, dir: &Path, cache: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_arbor"));
    c.args(args)
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", cache)
        .env_remove("ARBOR_STORE_COPIES_MB")
        .current_dir(dir);
    match url {
        Some(u) => c.env("ARBOR_STORE", u),
        None => c.env_remove("ARBOR_STORE"),
    };
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn ok(o: Output) -> Output {
    assert!(o.status.success(), "stdout:\n{}\nstderr:\n{}", stdout(&o), stderr(&o));
    o
}

/// A session of about 9 MB with a branch, as pi writes one.
fn big_session() -> String {
    let body = "w".repeat(1000);
    let mut text =
        String::from(r#"{"type":"session","version":3,"id":"big","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#);
    text.push('\n');
    for i in 0..9000 {
        let parent = match i {
            0 => "null".to_owned(),
            _ if i % 1000 == 0 => format!("\"e{}\"", i - 10),
            _ => format!("\"e{}\"", i - 1),
        };
        writeln!(text, r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"user","content":"m{i} {body}"}}}}"#).unwrap();
    }
    text
}

/// The files in `dir` (none when it does not exist).
fn files(dir: &Path) -> Vec<(String, u64)> {
    let Ok(rd) = fs::read_dir(dir) else { return vec![] };
    let mut out: Vec<_> =
        rd.map(|e| e.unwrap()).map(|e| (e.file_name().into_string().unwrap(), e.metadata().unwrap().len())).collect();
    out.sort();
    out
}

#[test]
fn tree_json_of_a_large_session_reads_from_its_copy_the_second_time() {
    let Some(db) = TestDb::new("cli_copies") else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("--w--").join("big.jsonl");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    let text = big_session();
    assert!(text.len() > 8 << 20);
    fs::write(&file, &text).unwrap();
    let cache = dir.path().join("cache");
    let url = Some(db.url.as_str());
    ok(arbor(url, dir.path(), &cache, &["push", file.to_str().unwrap()], &[]));
    let want = stdout(&ok(arbor(None, dir.path(), &cache, &["tree", file.to_str().unwrap(), "--json"], &[])));

    // The first read from the server makes the copy; the second reads it. Both print what the file does.
    let tree = ["tree", "/--w--/big.jsonl", "--json"];
    assert_eq!(stdout(&ok(arbor(url, dir.path(), &cache, &tree, &[]))), want);
    let copies = cache.join("copies");
    let made = files(&copies);
    assert!(made.iter().any(|c| c.1 == text.len() as u64), "a copy of the session: {made:?}");
    let copy = copies.join(&made.iter().find(|c| c.1 == text.len() as u64).unwrap().0);
    assert!(fs::read(&copy).unwrap() == text.as_bytes(), "the copy is the session, byte for byte");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(fs::metadata(&copies).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(fs::metadata(&copy).unwrap().permissions().mode() & 0o777, 0o600);
    }
    // The copy changed on disk at its end is noticed: never printed.
    let mut bytes = fs::read(&copy).unwrap();
    let n = bytes.len();
    bytes[n - 6..n - 3].copy_from_slice(b"XYZ");
    fs::write(&copy, &bytes).unwrap();
    assert_eq!(stdout(&ok(arbor(url, dir.path(), &cache, &tree, &[]))), want);
    assert_eq!(stdout(&ok(arbor(url, dir.path(), &cache, &tree, &[]))), want);
    assert!(fs::read(&copy).unwrap() == text.as_bytes(), "made again from the server");

    // No budget: no copy.
    let other = dir.path().join("other-cache");
    assert_eq!(stdout(&ok(arbor(url, dir.path(), &other, &tree, &[("ARBOR_STORE_COPIES_MB", "0")]))), want);
    assert_eq!(files(&other.join("copies")), vec![]);
    // A budget that is not a number: one line naming the variable.
    let o = arbor(url, dir.path(), &other, &tree, &[("ARBOR_STORE_COPIES_MB", "lots")]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("ARBOR_STORE_COPIES_MB=lots is not a number of megabytes"), "{err}");

    // `cache clear` removes them.
    let o = ok(arbor(None, dir.path(), &cache, &["cache", "clear"], &[]));
    assert!(stdout(&o).starts_with("removed "), "{}", stdout(&o));
    assert!(!copies.exists());
}
