//! A second process for the tests: the test binary started again with
//! `CHILD_ENV` naming what to do, on its own connections.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

use arbor_pg::PgStore;
use arbor_tree::{OpenMode, Session};

use crate::{pg_opts, user};

const CHILD_ENV: &str = "ARBOR_PG_TEST_CHILD";

/// Not a test on its own: started by [`Writer::start`], this process opens
/// the session at `PATH` on `URL` for writing, prints `LOCKED <pid>`, and
/// then, for each line of stdin, `append` appends one entry (`APPENDED
/// <id>`), `flood` appends until a write fails (`APPENDED <id>` each, then
/// `FAILED <error>`); EOF ends it.
#[test]
fn writer_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else { return };
    let (url, path) = spec.split_once('\n').unwrap();
    let store = PgStore::connect(url).unwrap();
    let mut s = match Session::open(Path::new(path), OpenMode::Write, pg_opts(&store)) {
        Ok(s) => s,
        Err(e) => {
            println!("REFUSED {e}");
            return;
        }
    };
    say(&format!("LOCKED {}", std::process::id()));
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line).unwrap_or(0) > 0 {
        match line.trim() {
            "append" => {
                let id = s.append_message(user("from the other process")).unwrap();
                say(&format!("APPENDED {id}"));
            }
            "flood" => loop {
                match s.append_message(user(&"a line of some length ".repeat(20))) {
                    Ok(id) => say(&format!("APPENDED {id}")),
                    Err(e) => {
                        say(&format!("FAILED {e}"));
                        break;
                    }
                }
            },
            _ => {}
        }
        line.clear();
    }
}

fn say(s: &str) {
    println!("{s}");
    std::io::stdout().flush().unwrap();
}

/// A writer in another process.
pub struct Writer {
    child: Child,
    out: BufReader<ChildStdout>,
    /// The child's pid.
    pub pid: u32,
}

impl Writer {
    /// Starts the writer of `path` on `url`; `Err` with its message when it is refused.
    pub fn start(url: &str, path: &Path) -> Result<Writer, String> {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child::writer_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, format!("{url}\n{}", path.display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let first = read_tagged(&mut out, &["LOCKED ", "REFUSED "]);
        match first.split_once(' ') {
            Some(("LOCKED", pid)) => Ok(Writer { child, out, pid: pid.parse().unwrap() }),
            Some((_, e)) => {
                let _ = child.wait();
                Err(e.to_owned())
            }
            None => panic!("the child said {first:?}"),
        }
    }

    /// Sends a command line.
    pub fn send(&mut self, cmd: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{cmd}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line starting with one of `tags`.
    pub fn next(&mut self, tags: &[&str]) -> String {
        read_tagged(&mut self.out, tags)
    }

    /// SIGKILL, wait for the process to be gone, and hand back what it had
    /// said that was not read yet (the lines still in the pipe).
    pub fn kill_and_drain(mut self) -> Vec<String> {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut self.out, &mut rest);
        rest.lines().map(str::to_owned).collect()
    }

    /// SIGKILL, and wait for the process to be gone.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The next line of `out` that starts with one of `tags` (libtest may print before it on the same line).
fn read_tagged(out: &mut BufReader<ChildStdout>, tags: &[&str]) -> String {
    loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "the child ended before saying any of {tags:?}");
        if let Some(at) = tags.iter().filter_map(|t| line.find(t)).min() {
            return line[at..].trim_end().to_owned();
        }
    }
}
