//! Endless input (item 10 of issue #20): what is not a regular file (a
//! character device, a FIFO, a link to either, a directory) is refused with
//! one line by every command that reads or writes a session, without reading
//! a byte or blocking on it.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `arbor args` in `dir`, killed if it is still running after `limit`.
fn arbor_bounded(dir: &Path, args: &[&str], limit: Duration) -> (Option<std::process::Output>, Duration) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(args)
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", crate::cache_dir())
        .env_remove("ARBOR_SESSIONS_DIR")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return (None, start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (Some(child.wait_with_output().unwrap()), start.elapsed())
}

#[test]
fn what_is_not_a_regular_file_is_refused_with_one_line() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    assert!(Command::new("mkfifo").arg(dir.join("fifo.jsonl")).status().unwrap().success());
    symlink("/dev/zero", dir.join("zero.jsonl")).unwrap();
    symlink("fifo.jsonl", dir.join("to-fifo.jsonl")).unwrap();
    fs::create_dir(dir.join("folder.jsonl")).unwrap();
    let cases = [
        ("/dev/zero", "a character device"),
        ("zero.jsonl", "a character device"),
        ("fifo.jsonl", "a FIFO"),
        ("to-fifo.jsonl", "a FIFO"),
        ("folder.jsonl", "a directory"),
    ];
    for (file, kind) in cases {
        let commands: [&[&str]; 10] = [
            &["tree", file],
            &["tree", file, "--json"],
            &["dump", file],
            &["path", file],
            &["context", file],
            &["check", file],
            &["repair", file],
            &["label", file, "x", "y"],
            &["export", file, "--format", "jsonl"],
            &["import", "claude", file, "--sessions-dir", "imported"],
        ];
        for args in commands {
            let (out, took) = arbor_bounded(dir, args, Duration::from_secs(20));
            let Some(o) = out else { panic!("{args:?} was still running after {took:?}") };
            // `check` reports an unreadable file as a finding, on stdout, with its count line.
            let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
            assert!(!o.status.success(), "{args:?} succeeded: {text}");
            assert!(text.contains(&format!("not a regular file ({kind})")), "{args:?}: {text}");
            let lines = if args[0] == "check" { 2 } else { 1 };
            assert_eq!(text.trim_end().lines().count(), lines, "{args:?}: {text}");
        }
    }
}

/// A "regular" file whose size says 0 but whose reads never end (the
/// kernel's `/proc/self/pagemap`) is read as what its size says, under a
/// memory limit no command reaches (item 1 of issue #38; before, every
/// reading command grew to gigabytes until it was killed).
#[test]
fn a_file_that_says_it_is_empty_but_never_ends_is_read_with_a_bound() {
    let file = "/proc/self/pagemap";
    if fs::File::open(file).is_err() {
        eprintln!("skipped: {file} cannot be opened here");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let commands: [&[&str]; 11] = [
        &["tree", file],
        &["tree", file, "--json"],
        &["dump", file, "--json"],
        &["path", file],
        &["context", file, "--json"],
        &["check", file],
        &["repair", file],
        &["repair", file, "--write"],
        &["diff", file, "a", "b"],
        &["navigate", file, "a"],
        &["export", file, "--format", "jsonl", "--all"],
    ];
    for args in commands {
        // Under `ulimit -v` (1 GiB): a command that read on would fail to allocate, not take the machine.
        let mut c = Command::new("sh");
        c.args(["-c", "ulimit -v 1048576; exec \"$0\" \"$@\"", env!("CARGO_BIN_EXE_arbor")])
            .args(args)
            .env("HOME", "/nonexistent-home")
            .env("ARBOR_CACHE_DIR", crate::cache_dir())
            .current_dir(d.path())
            .stdin(Stdio::null());
        let start = Instant::now();
        let o = c.output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(!o.status.success(), "{args:?} succeeded: {text}");
        // Read as empty: no header; a writer refuses it first (it is not writable).
        let said = ["no session header", "no usable session header", "the file is read-only"];
        assert!(said.iter().any(|s| text.contains(s)), "{args:?}: {text}");
        assert!(!text.contains("memory allocation"), "{args:?}: {text}");
        assert!(start.elapsed() < Duration::from_secs(20), "{args:?} took {:?}", start.elapsed());
    }
}
