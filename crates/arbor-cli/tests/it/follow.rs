//! `arbor tail` on a local file, as `tail -F` follows one: a file rewritten
//! in place (even grown back past its old size between two looks) is shown
//! again, a deleted file is waited for, and what is no regular file (a FIFO,
//! a device) is refused at once with one line.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use crate::{cache_dir, fixtures, stderr};

fn tail(dir: &Path, file: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_arbor"));
    c.args(["tail", "-n", "1"])
        .arg(file)
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", cache_dir())
        .env("ARBOR_SESSIONS_DIR", dir.join("sessions"))
        .env_remove("ARBOR_STORE")
        .current_dir(dir);
    c
}

/// Lines of a child's stream, as they come.
fn lines(r: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits for a line containing `what`.
fn expect(rx: &Receiver<String>, what: &str) -> String {
    loop {
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(l) if l.contains(what) => return l,
            Ok(_) => {}
            Err(_) => panic!("no line with {what:?} within 10 s"),
        }
    }
}

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_rewritten_deleted_and_restored_file_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    let demo = fs::read_to_string(fixtures().join("demo/demo.jsonl")).unwrap();
    let lines_of = |n: usize| demo.lines().take(n).map(|l| format!("{l}\n")).collect::<String>();
    fs::write(&file, lines_of(20)).unwrap();
    let mut child = tail(dir.path(), &file).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let (out, err) = (lines(child.stdout.take().unwrap()), lines(child.stderr.take().unwrap()));
    let _running = Running(child);
    let last = |n: usize| demo.lines().nth(n - 1).and_then(|l| l.split('"').nth(7)).unwrap().to_owned();
    expect(&out, &last(20));

    // Rewritten in place with other lines, longer than before, within one look.
    let other: String = demo.lines().skip(20).map(|l| format!("{l}\n")).collect();
    let mut bytes = lines_of(1) + &other;
    bytes.push_str(&other);
    assert!(bytes.len() > lines_of(20).len());
    fs::OpenOptions::new().write(true).truncate(true).open(&file).unwrap().write_all(bytes.as_bytes()).unwrap();
    expect(&err, "was replaced whole");
    expect(&out, &last(40));

    // Deleted: said once, then waited for; back: shown again.
    fs::remove_file(&file).unwrap();
    expect(&err, "the session is gone; waiting for it to come back");
    fs::write(&file, lines_of(30)).unwrap();
    expect(&err, "was replaced whole (or is back)");
    expect(&out, &last(30));
}

#[cfg(unix)]
#[test]
fn a_fifo_or_a_device_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.jsonl");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for target in [fifo.as_path(), Path::new("/dev/zero")] {
        let mut child = tail(dir.path(), target).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let err = lines(child.stderr.take().unwrap());
        let mut running = Running(child);
        let line = expect(&err, "not a regular file");
        let status = running.0.wait().unwrap();
        assert_eq!(status.code(), Some(1), "{line}");
        assert!(line.starts_with("arbor: ") && line.contains(&target.display().to_string()), "{line}");
    }
    let o = Command::new(env!("CARGO_BIN_EXE_arbor")).args(["tail"]).arg(dir.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "a folder: {}", stderr(&o));
}
