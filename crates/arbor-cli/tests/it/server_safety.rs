//! What a shared server must never do to the people using it: write
//! outside the folder a pull was given, or show a password (in `--help`, in
//! an error, anywhere). Names planted on the server by any role with INSERT
//! are refused one by one while the rest of the pull goes on.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use arbor_test_support::pg::TestDb;

use crate::{cache_dir, stderr, stdout};

/// `arbor ARGS` in `dir`, with `env` set and no store unless `env` gives one.
fn arbor_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_arbor"));
    c.args(args)
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", cache_dir())
        .env("ARBOR_SESSIONS_DIR", dir.join("sessions"))
        .env_remove("ARBOR_STORE")
        .current_dir(dir);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// Plants a one-line session row under any name, as a role with INSERT could.
fn plant(db: &TestDb, dir: &str, name: &str) {
    let line = b"{\"type\":\"session\",\"version\":3,\"id\":\"p\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n".to_vec();
    let mut c = db.client();
    let id: i64 = c
        .query_one(
            "INSERT INTO arbor.sessions (dir, name, line_count, byte_size) VALUES ($1, $2, 1, $3) RETURNING id",
            &[&dir, &name, &(line.len() as i64)],
        )
        .unwrap()
        .get(0);
    c.execute("INSERT INTO arbor.lines (session, seq, off, bytes) VALUES ($1, 0, 0, $2)", &[&id, &line]).unwrap();
}

/// Every path under `root`, relative, sorted.
fn tree(root: &Path) -> Vec<String> {
    let mut out = vec![];
    let mut stack = vec![root.to_owned()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(root).unwrap().display().to_string());
            if p.is_dir() && !p.is_symlink() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn pull_all_refuses_unsafe_names_and_links_and_pulls_the_rest() {
    let Some(db) = TestDb::new("cli_pull_unsafe") else { return };
    let base = tempfile::tempdir().unwrap();
    let (root, outside) = (base.path().join("root"), base.path().join("outside"));
    fs::create_dir_all(&outside).unwrap();
    fs::create_dir_all(root.join("to")).unwrap();
    fs::write(outside.join("victim.jsonl"), "precious\n").unwrap();
    // The first pull makes the schema; then the rows a hostile role could plant.
    let o = arbor_env(base.path(), &["pull", "--all", "--to", "root/to", "--from", &db.url], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let outside_abs = outside.join("abs.jsonl").display().to_string();
    let bad = [
        ("..", "up.jsonl"),
        ("--p--", "../../../outside/up.jsonl"),
        ("/", "root.jsonl"),
        ("--p--", outside_abs.as_str()),
        ("a/../../..", "up.jsonl"),
        ("--p--", "bell\u{7}.jsonl"),
    ];
    for (dir, name) in bad {
        plant(&db, dir, name);
    }
    plant(&db, "--p--", "good.jsonl");
    // A link planted inside the folder pulled into is never followed either.
    std::os::unix::fs::symlink(&outside, root.join("to/--linked--")).unwrap();
    plant(&db, "--linked--", "victim.jsonl");

    let o = arbor_env(base.path(), &["pull", "--all", "--to", "root/to", "--from", &db.url], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), bad.len() + 2, "one line per refused row, then the count:\n{err}");
    assert_eq!(lines.iter().filter(|l| l.contains("not a safe name")).count(), bad.len(), "{err}");
    assert!(err.contains("session \"--p--/bell\\u{7}.jsonl\": not a safe name (a control character)"), "{err}");
    assert!(err.contains("a symbolic link; Arbor does not follow links"), "{err}");
    assert!(err.ends_with(&format!("arbor: {} of 8 sessions not pulled\n", bad.len() + 1)), "{err}");
    assert!(!err.contains('\u{7}'), "{err}");
    assert!(stdout(&o).contains("/--p--/good.jsonl: created (1 lines)"), "{}", stdout(&o));
    assert_eq!(tree(&outside), ["victim.jsonl"]);
    assert_eq!(fs::read_to_string(outside.join("victim.jsonl")).unwrap(), "precious\n");
    assert_eq!(tree(&root), ["to", "to/--linked--", "to/--p--", "to/--p--/good.jsonl"]);
}

/// The subcommands `arbor --help` lists.
fn subcommands(help: &str) -> Vec<String> {
    help.split("Commands:")
        .nth(1)
        .unwrap()
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|c| c != "help")
        .collect()
}

#[test]
fn no_help_shows_the_password_of_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = "postgres://arbor:Hunter2Secret@db.internal:5432/arbor?sslpassword=KeyPass99";
    let env = [("ARBOR_STORE", store)];
    let top = arbor_env(dir.path(), &["--help"], &env);
    let help = stdout(&top);
    assert!(help.contains("--store <URL>"), "{help}");
    let commands = subcommands(&help);
    assert!(commands.len() > 15, "{commands:?}");
    let mut outputs = vec![top];
    for c in &commands {
        outputs.push(arbor_env(dir.path(), &[c, "--help"], &env));
        outputs.push(arbor_env(dir.path(), &["help", c], &env));
    }
    outputs.push(arbor_env(dir.path(), &["-h"], &env));
    for o in &outputs {
        let text = format!("{}{}", stdout(o), stderr(o));
        assert!(!text.contains("Hunter2Secret") && !text.contains("KeyPass99"), "{text}");
        assert!(!text.contains("db.internal"), "the store's value is not shown at all: {text}");
    }
}

#[test]
fn no_error_shows_a_password_in_any_form() {
    let dir = tempfile::tempdir().unwrap();
    let sock = "%2Ftmp%2Farbor-no-server-here";
    let forms = [
        format!("postgres://arbor:Hunter2Secret@{sock}/postgres"),
        format!("postgres://arbor:Hunter2/Secret@{sock}/postgres"),
        format!("postgres://arbor@{sock}/postgres?password=Hunter2Secret"),
        format!("postgres://arbor@{sock}/postgres?connect_timeout=2&pass%77ord=Hunter2Secret"),
        "host=/tmp/arbor-no-server-here user=arbor password=Hunter2Secret dbname=x".to_owned(),
        "host=/tmp/arbor-no-server-here user=arbor password = Hunter2Secret dbname=x".to_owned(),
        "host=/tmp/arbor-no-server-here user=arbor password='Hunter2Secret words' dbname=x".to_owned(),
        "host=/tmp/arbor-no-server-here password='it\\'s Hunter2Secret' dbname=x".to_owned(),
        "host=/tmp/arbor-no-server-here password=Hunter2Secret port=notaport".to_owned(),
        "host=/tmp/arbor-no-server-here password='Hunter2Secret".to_owned(),
        "postgres://arbor:Hunter2Secret@h/db?port=notaport".to_owned(),
    ];
    for form in &forms {
        for args in [&["ls"][..], &["--store", form, "path", "x"], &["push", "x.jsonl", "--to", form]] {
            let o = arbor_env(dir.path(), args, &[("ARBOR_STORE", form)]);
            let text = format!("{}{}", stdout(&o), stderr(&o));
            assert_eq!(o.status.code(), Some(1), "{form} {args:?}: {text}");
            assert!(!text.contains("Hunter2") && !text.contains("Secret"), "{form} {args:?}: {text}");
            assert!(text.contains("***"), "the address is shown, masked: {text}");
        }
    }
}
