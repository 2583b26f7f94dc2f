//! `ls`, `search` and the catalog under trouble, with real processes: a file
//! nobody can read, two first searches at once, files that would take the
//! memory of a naive reader, a catalog path planted as a link, a catalog left
//! read-only by another user, a secret redacted in place, a session deleted
//! while it is listed, and a query too long to run.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::{fixtures, stderr, stdout};

/// A sessions root with `n` copies of the demo session in two directories
/// (each copy's id and entry text made its own), in a directory every user may read.
fn store(n: usize) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    open_up(dir.path());
    let root = dir.path().join("sessions");
    let demo = fs::read_to_string(fixtures().join("demo/demo.jsonl")).unwrap();
    for i in 0..n {
        let cwd = if i % 2 == 0 { "--home-dev-wordfreq--" } else { "--other--" };
        fs::create_dir_all(root.join(cwd)).unwrap();
        let text = demo.replace("fe01ce2a-7fba-48fa-baed-7c982a04e229", &format!("fe01ce2a-7fba-48fa-baed-{i:012}"));
        fs::write(root.join(cwd).join(format!("s{i:03}.jsonl")), text).unwrap();
    }
    for d in [&root, &root.join("--home-dev-wordfreq--"), &root.join("--other--")] {
        open_up(d);
    }
    (dir, root)
}

#[cfg(unix)]
fn open_up(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if p.exists() {
        fs::set_permissions(p, fs::Permissions::from_mode(0o777)).unwrap();
    }
}

/// True when this process is root (file permissions do not stop it).
fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `arbor ARGS` with `cache` as its cache directory; as user `nobody` when
/// `as_nobody` and this process is root (through `setpriv`).
fn arbor_with(cache: &Path, as_nobody: bool, args: &[&str]) -> Command {
    let bin = env!("CARGO_BIN_EXE_arbor");
    let mut c = if as_nobody && is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin]);
        c
    } else {
        Command::new(bin)
    };
    c.args(args).env("ARBOR_CACHE_DIR", cache).env("HOME", "/nonexistent-home").env_remove("ARBOR_SESSIONS_DIR");
    c
}

fn run(mut c: Command) -> Output {
    c.output().unwrap()
}

/// The paths `ls --all --json` lists.
fn listed(out: &Output) -> Vec<String> {
    assert!(out.status.success(), "{}", stderr(out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array().unwrap().iter().map(|i| i["path"].as_str().unwrap().to_owned()).collect()
}

#[cfg(unix)]
#[test]
fn a_file_nobody_can_read_is_left_out_with_a_warning_naming_it() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, root) = store(3);
    let cache = dir.path().join("cache");
    let locked = root.join("--other--/s001.jsonl");
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    let r = root.to_str().unwrap();
    for _ in 0..2 {
        // The first run catalogs the others; the second finds the row-less file again.
        let ls = run(arbor_with(&cache, true, &["ls", "--all", "--json", "--sessions-dir", r]));
        assert_eq!(listed(&ls).len(), 2, "{}", stderr(&ls));
        assert!(stderr(&ls).contains(&format!("cannot read {}", locked.display())), "{}", stderr(&ls));
        let search = run(arbor_with(&cache, true, &["search", "punctuation", "--all", "--json", "--sessions-dir", r]));
        assert!(search.status.success(), "{}", stderr(&search));
        let hits: serde_json::Value = serde_json::from_slice(&search.stdout).unwrap();
        assert!(!hits.as_array().unwrap().is_empty());
        assert!(hits.as_array().unwrap().iter().all(|h| h["path"].as_str().unwrap() != locked.to_str().unwrap()));
    }
    // Readable again: listed again.
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o644)).unwrap();
    let ls = run(arbor_with(&cache, true, &["ls", "--all", "--json", "--sessions-dir", r]));
    assert_eq!(listed(&ls).len(), 3);
}

#[test]
fn two_first_searches_at_once_both_answer_the_same() {
    let (dir, root) = store(40);
    let r = root.to_str().unwrap();
    for round in 0..3 {
        let cache = dir.path().join(format!("cache-{round}"));
        let spawn = || {
            arbor_with(
                &cache,
                false,
                &["search", "punctuation", "--all", "--json", "--limit", "500", "--sessions-dir", r],
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        };
        let (a, b) = (spawn(), spawn());
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        for o in [&a, &b] {
            assert!(o.status.success(), "round {round}: {}", stderr(o));
            assert_eq!(stderr(o), "", "round {round}");
        }
        assert_eq!(stdout(&a), stdout(&b), "round {round}");
        // And a third, from the filters they left.
        let c = run(arbor_with(
            &cache,
            false,
            &["search", "punctuation", "--all", "--json", "--limit", "500", "--sessions-dir", r],
        ));
        assert_eq!(stdout(&c), stdout(&a), "round {round}");
    }
}

#[test]
fn a_damaged_catalog_answers_in_the_run_that_rebuilds_it() {
    let (dir, root) = store(4);
    let cache = dir.path().join("cache");
    let r = root.to_str().unwrap();
    let search = |c: &Path| run(arbor_with(c, false, &["search", "punctuation", "--all", "--sessions-dir", r]));
    let first = search(&cache);
    assert!(first.status.success() && stdout(&first).contains("«punctuation»"), "{}", stdout(&first));
    // The listing's table survives; what only a search reads does not.
    let db = fs::read_dir(cache.join("catalog"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("DROP TABLE columns; CREATE TABLE columns (x);").unwrap();
    drop(conn);
    let again = search(&cache);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(stdout(&again), stdout(&first));
    assert!(stderr(&again).contains("damaged") && stderr(&again).contains("built again"), "{}", stderr(&again));
}

#[test]
fn a_query_of_fifteen_thousand_words_is_refused_at_once() {
    let (dir, root) = store(2);
    let cache = dir.path().join("cache");
    let phrase = format!("\"{}\"", vec!["word"; 15_000].join(" "));
    let started = Instant::now();
    let out = run(arbor_with(&cache, false, &["search", &phrase, "--all", "--sessions-dir", root.to_str().unwrap()]));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("arbor: invalid search query: the query is too long"), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1);
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Peak memory of a command in KiB (GNU time), or `None` without GNU time.
fn peak_kib(c: &mut Command) -> Option<(Output, u64)> {
    let probe = Command::new("/usr/bin/time").args(["-f", "%M", "true"]).output().ok()?;
    if !probe.status.success() {
        return None;
    }
    let program = c.get_program().to_owned();
    let args: Vec<_> = c.get_args().map(ToOwned::to_owned).collect();
    let mut t = Command::new("/usr/bin/time");
    t.arg("-f").arg("%M").arg(program).args(args);
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => t.env(k, v),
            None => t.env_remove(k),
        };
    }
    let out = t.output().ok()?;
    let kib = stderr(&out).lines().last()?.trim().parse().ok()?;
    Some((out, kib))
}

#[test]
fn a_huge_file_without_newlines_costs_its_head_not_its_size() {
    let (dir, root) = store(2);
    let cache = dir.path().join("cache");
    let d = root.join("--other--");
    // 32 GB of nothing (sparse: no disk), and 200 MB of one line after a session header.
    let sparse = fs::File::create(d.join("sparse.jsonl")).unwrap();
    sparse.set_len(32 << 30).unwrap();
    let mut long = fs::File::create(d.join("long-line.jsonl")).unwrap();
    let header =
        r#"{"type":"session","version":3,"id":"long-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/other"}"#;
    writeln!(long, "{header}").unwrap();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..200 {
        long.write_all(&chunk).unwrap();
    }
    drop(long);
    let r = root.to_str().unwrap();
    let mut ls = arbor_with(&cache, false, &["ls", "--all", "--json", "--sessions-dir", r]);
    let Some((out, kib)) = peak_kib(&mut ls) else {
        eprintln!("SKIPPED: GNU time is not installed");
        return;
    };
    let names = listed(&Output { stderr: vec![], ..out });
    assert_eq!(names.len(), 3, "the two sessions and the header-only one: {names:?}");
    assert!(kib < 80 * 1024, "ls peaked at {kib} KiB");
    let mut search = arbor_with(&cache, false, &["search", "punctuation", "--all", "--sessions-dir", r]);
    let (out, kib) = peak_kib(&mut search).unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(kib < 120 * 1024, "search peaked at {kib} KiB");
}

#[cfg(unix)]
#[test]
fn a_catalog_path_planted_as_a_link_to_another_database_is_not_written() {
    let (dir, root) = store(2);
    let cache = dir.path().join("cache");
    let r = root.to_str().unwrap();
    // Where the catalog goes, learnt from a first run; then planted.
    assert!(run(arbor_with(&cache, false, &["ls", "--all", "--sessions-dir", r])).status.success());
    let catalog = cache.join("catalog");
    let db = fs::read_dir(&catalog)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .unwrap();
    fs::remove_dir_all(&catalog).unwrap();
    fs::create_dir_all(&catalog).unwrap();
    let victim = dir.path().join("victim.sqlite");
    let conn = rusqlite::Connection::open(&victim).unwrap();
    conn.execute_batch("CREATE TABLE precious (x); INSERT INTO precious VALUES (42);").unwrap();
    drop(conn);
    let before = fs::read(&victim).unwrap();
    std::os::unix::fs::symlink(&victim, &db).unwrap();
    let ls = run(arbor_with(&cache, false, &["ls", "--all", "--json", "--sessions-dir", r]));
    assert_eq!(listed(&ls).len(), 2);
    assert!(stderr(&ls).contains("kept in memory"), "{}", stderr(&ls));
    let search = run(arbor_with(&cache, false, &["search", "punctuation", "--all", "--sessions-dir", r]));
    assert!(search.status.success() && stdout(&search).contains("«punctuation»"), "{}", stderr(&search));
    assert_eq!(fs::read(&victim).unwrap(), before, "the linked database is untouched");
    assert!(fs::symlink_metadata(&db).unwrap().file_type().is_symlink());
    // Someone else's database in the catalog's place (no link) is not written either.
    fs::remove_file(&db).unwrap();
    fs::copy(&victim, &db).unwrap();
    let ls = run(arbor_with(&cache, false, &["ls", "--all", "--json", "--sessions-dir", r]));
    assert_eq!(listed(&ls).len(), 2);
    assert!(stderr(&ls).contains("not Arbor's catalog"), "{}", stderr(&ls));
    assert_eq!(fs::read(&db).unwrap(), before);
}

#[cfg(unix)]
#[test]
fn a_catalog_another_user_left_is_read_in_memory() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, root) = store(2);
    let cache = dir.path().join("cache");
    let r = root.to_str().unwrap();
    // As `sudo arbor ls` leaves it: the catalog made by root (or made read-only
    // when not root), its journal files there (another process has it open).
    assert!(run(arbor_with(&cache, false, &["search", "punctuation", "--all", "--sessions-dir", r])).status.success());
    let db = fs::read_dir(cache.join("catalog"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .unwrap();
    let holder = rusqlite::Connection::open(&db).unwrap();
    let _: i64 = holder.query_row("SELECT count(*) FROM sessions", [], |r| r.get(0)).unwrap();
    // A session grows: the refresh has something to write.
    let file = root.join("--home-dev-wordfreq--/s000.jsonl");
    let last = fs::read_to_string(&file).unwrap().lines().last().unwrap().to_owned();
    fs::OpenOptions::new().append(true).open(&file).unwrap().write_all(format!("{last}\n").as_bytes()).unwrap();
    if !is_root() {
        for e in fs::read_dir(cache.join("catalog")).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                fs::set_permissions(p, fs::Permissions::from_mode(0o444)).unwrap();
            }
        }
        fs::set_permissions(cache.join("catalog"), fs::Permissions::from_mode(0o555)).unwrap();
    } else {
        // Readable by all, writable by root only.
        open_up(&cache);
    }
    let ls = run(arbor_with(&cache, true, &["ls", "--all", "--json", "--sessions-dir", r]));
    assert_eq!(listed(&ls).len(), 2, "{}", stderr(&ls));
    assert!(stderr(&ls).contains("kept in memory"), "{}", stderr(&ls));
    let search = run(arbor_with(&cache, true, &["search", "punctuation", "--all", "--sessions-dir", r]));
    assert!(search.status.success(), "{}", stderr(&search));
    assert!(stdout(&search).contains("«punctuation»"));
    drop(holder);
    if !is_root() {
        fs::set_permissions(cache.join("catalog"), fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// True when no file under `dir` holds `needle`.
fn nowhere_in(dir: &Path, needle: &str) -> Result<(), String> {
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if memchr::memmem::find(&fs::read(&p).unwrap(), needle.as_bytes()).is_some() {
                return Err(format!("{} holds it", p.display()));
            }
        }
    }
    Ok(())
}

/// Appends a user message after the file's last entry.
fn append_reply(file: &Path, id: &str) {
    let last = fs::read_to_string(file).unwrap().lines().last().unwrap().to_owned();
    let v: serde_json::Value = serde_json::from_str(&last).unwrap();
    let extra = format!(
        r#"{{"type":"message","id":"{id}","parentId":"{}","timestamp":"2026-03-14T10:00:00.000Z","message":{{"role":"user","content":"thanks","timestamp":1773482400000}}}}"#,
        v["id"].as_str().unwrap()
    );
    fs::OpenOptions::new().append(true).open(file).unwrap().write_all(format!("{extra}\n").as_bytes()).unwrap();
}

#[test]
fn a_secret_redacted_in_place_leaves_search_and_the_cache() {
    let (dir, root) = store(1);
    let cache = dir.path().join("cache");
    let r = root.to_str().unwrap();
    let file = root.join("--home-dev-wordfreq--/s000.jsonl");
    let secret = "sk-live-7f3a9c2e5b1d8f4a6c0e";
    // The secret pasted in the first message (which the listing keeps) and in a later one,
    // far from both ends of the file (a custom entry of 6 KB comes first).
    let text = fs::read_to_string(&file).unwrap();
    let pad = format!(
        r#"{{"type":"custom","customType":"pad","data":"{}","id":"pad00001","parentId":"a5f55c19","timestamp":"2026-03-14T09:12:03.426Z"}}"#,
        "p".repeat(6000)
    );
    let text = text.replacen("\n{\"type\":\"message\"", &format!("\n{pad}\n{{\"type\":\"message\""), 1);
    let text = text.replacen("wordfreq counts", &format!("{secret} wordfreq counts"), 1);
    let text = text.replacen("Strip punctuation", &format!("{secret} Strip punctuation"), 1);
    fs::write(&file, &text).unwrap();
    let search = |q: &str| run(arbor_with(&cache, false, &["search", q, "--all", "--sessions-dir", r]));
    let ls = || run(arbor_with(&cache, false, &["ls", "--all", "--json", "--sessions-dir", r]));
    for (round, how) in ["written over in place", "sed -i"].iter().enumerate() {
        assert_eq!(stdout(&search(secret)).matches("«sk-live-").count(), 2, "{how}");
        assert!(stdout(&ls()).contains(secret), "the listing shows the first message");
        let redacted = format!("sk-live-REDACTED-{round}-REDACTEDX");
        assert_eq!(redacted.len(), secret.len());
        if round == 0 {
            // The same file, the same length, then a reply appended.
            let edited = fs::read_to_string(&file).unwrap().replace(secret, &redacted);
            fs::OpenOptions::new().write(true).open(&file).unwrap().write_all(edited.as_bytes()).unwrap();
        } else {
            let sed = Command::new("sed").arg("-i").arg(format!("s/{secret}/{redacted}/g")).arg(&file).status();
            assert!(sed.unwrap().success());
        }
        append_reply(&file, &format!("abcd000{round}"));
        let after = search(secret);
        assert!(after.status.success(), "{}", stderr(&after));
        assert!(!stdout(&after).contains("sk-live-7f3a"), "{how}: {}", stdout(&after));
        assert!(!stdout(&ls()).contains(secret), "{how}");
        if let Err(e) = nowhere_in(&cache, secret) {
            panic!("{how}: {e}");
        }
        // Back for the next round.
        let back = fs::read_to_string(&file).unwrap().replace(&redacted, secret);
        fs::write(&file, back).unwrap();
    }
    // `arbor cache clear` purges what was derived.
    let clear = run(arbor_with(&cache, false, &["cache", "clear"]));
    assert!(clear.status.success(), "{}", stderr(&clear));
    assert!(stdout(&clear).starts_with("removed "), "{}", stdout(&clear));
    assert!(!cache.join("catalog").exists());
}

#[test]
fn ls_all_json_holds_while_sessions_are_deleted() {
    let (dir, root) = store(60);
    let cache = dir.path().join("cache");
    let r = root.to_str().unwrap().to_owned();
    let files: Vec<PathBuf> = ["--home-dev-wordfreq--", "--other--"]
        .iter()
        .flat_map(|d| fs::read_dir(root.join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .collect();
    let deleter = std::thread::spawn(move || {
        for f in files {
            let _ = fs::remove_file(f);
            std::thread::sleep(Duration::from_millis(3));
        }
    });
    let mut runs = 0;
    while !deleter.is_finished() || runs < 3 {
        let ls = run(arbor_with(&cache, false, &["ls", "--all", "--json", "--sessions-dir", &r]));
        assert!(ls.status.success(), "run {runs}: {}", stderr(&ls));
        serde_json::from_slice::<serde_json::Value>(&ls.stdout).unwrap();
        runs += 1;
    }
    deleter.join().unwrap();
}
