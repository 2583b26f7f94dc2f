//! Crash safety across real processes: a writer killed with SIGKILL at random
//! moments never loses an acknowledged entry, leaves at most a torn last line,
//! does not keep its lock, and the next writer appends cleanly after it. A
//! reader running beside a live writer never sees half a line as an entry.
//!
//! The writer is this test binary run again with an environment variable (as
//! in `lock.rs`). `ARBOR_CRASH_KILLS` sets the number of kills (default 20;
//! CI sets 200) and, when set, also lengthens the reader test from 3 s to
//! 15 s; `ARBOR_CRASH_SEED` sets the seed of the kill schedule.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use arbor_log::{Diagnostic, DiagnosticKind, Durability, EntryKind, SessionLog};
use arbor_tree::{lock_path, Session, SessionOptions, TreeError};
use serde_json::{json, Value};

use crate::{assistant, user};
use arbor_tree::OpenMode;

const CHILD_PATH: &str = "ARBOR_TEST_CRASH_CHILD";
const CHILD_SEED: &str = "ARBOR_TEST_CRASH_CHILD_SEED";
const CHILD_DURABILITY: &str = "ARBOR_TEST_CRASH_CHILD_FSYNC";
/// Set for the reader test's writer, which runs until its stdin closes.
const CHILD_UNTIL_STDIN: &str = "ARBOR_TEST_CRASH_CHILD_UNTIL_STDIN";
/// Files are rotated so that re-reading after every kill stays cheap.
const KILLS_PER_FILE: usize = 25;

/// A tiny deterministic generator (64-bit LCG, high bits), enough for schedules.
#[derive(Debug, Clone)]
struct Lcg(u64);

impl Lcg {
    fn new(seed: u64) -> Lcg {
        let mut g = Lcg(seed ^ 0x9e37_79b9_7f4a_7c15);
        g.next();
        g
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        (!items.is_empty()).then(|| &items[self.below(items.len() as u64) as usize])
    }
}

/// FNV-1a of an entry's JSON text: what the writer acknowledges and the parent compares.
fn fnv(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

fn writer_opts(durability: Durability) -> SessionOptions {
    SessionOptions { durability, ..SessionOptions::default() }
}

/// Text of `len` bytes or a little more, with multi-byte characters so that a
/// torn write can also cut a character in half.
fn filler(rng: &mut Lcg, len: usize) -> String {
    const WORDS: [&str; 6] = ["lorem ", "ipsum ", "déjà vu ", "naïve ", "日本語 ", "\"quoted\"\n"];
    let mut s = String::with_capacity(len + 16);
    while s.len() < len {
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
    }
    s
}

/// Not a test on its own: started by the crash tests, this process opens the
/// session for writing and appends until it is killed (or, for the reader
/// test, until its stdin closes), printing `ACK <id> <hash>` after each
/// append has returned.
#[test]
fn crash_writer_child() {
    let Ok(path) = std::env::var(CHILD_PATH) else { return };
    let seed = env_number(CHILD_SEED).unwrap_or(1);
    let durability = if env_number(CHILD_DURABILITY) == Some(1) { Durability::Fsync } else { Durability::Buffered };
    // The reader test ends its writer by closing its stdin; the crash test kills it.
    let stop = Arc::new(AtomicBool::new(false));
    if std::env::var(CHILD_UNTIL_STDIN).is_ok() {
        let stop = stop.clone();
        thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
            stop.store(true, Ordering::SeqCst);
        });
    }
    let mut s = Session::open(Path::new(&path), OpenMode::Write, writer_opts(durability)).unwrap();
    let mut rng = Lcg::new(seed);
    let mut known: Vec<String> = s.entries().map(Result::unwrap).map(|e| e.id.clone()).collect();
    let mut out = std::io::stdout().lock();
    if writeln!(out, "\nREADY").and_then(|_| out.flush()).is_err() {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut n = 0u64;
    while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
        n += 1;
        let id = match rng.below(20) {
            0..=6 => s.append_message(user(&format!("u{n} {}", filler(&mut rng, 40)))),
            7..=11 => s.append_message(assistant(&format!("a{n} {}", filler(&mut rng, 80)))),
            12 | 13 => {
                let target = rng.pick(&known).cloned().unwrap_or_default();
                let label = (rng.below(3) > 0).then(|| format!("l{}", rng.below(5)));
                s.append_label_change(&target, label.as_deref())
            }
            14 => {
                let to = rng.pick(&known).cloned().unwrap_or_default();
                s.branch(&to).unwrap();
                s.append_message(user(&format!("b{n}")))
            }
            15 => {
                let from = rng.pick(&known).cloned();
                s.branch_with_summary(from.as_deref(), &filler(&mut rng, 60), Some(json!({"n": n})), Some(false))
            }
            16 => s.append_thinking_level_change(["off", "low", "high"][rng.below(3) as usize]),
            17 => s.append_custom_message_entry("crash.note", json!(filler(&mut rng, 30)), true, None),
            // Large lines make a write span many pages, so a kill can cut it short.
            _ => {
                let len = 16 * 1024 + rng.below(512 * 1024) as usize;
                s.append_message(user(&filler(&mut rng, len)))
            }
        }
        .unwrap();
        let json = s.entry_json(&id).unwrap().unwrap();
        if writeln!(out, "ACK {id} {:016x}", fnv(json)).and_then(|_| out.flush()).is_err() {
            return;
        }
        known.push(id);
    }
}

/// What the child printed: ready, then acknowledgements.
#[derive(Debug)]
enum Event {
    Ready,
    Ack(String, u64),
}

fn spawn_writer(path: &Path, seed: u64, durability: Durability, until_stdin: bool) -> (Child, mpsc::Receiver<Event>) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "crash::crash_writer_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_PATH, path)
        .env(CHILD_SEED, seed.to_string())
        .env(CHILD_DURABILITY, if durability == Durability::Fsync { "1" } else { "0" })
        .stdin(if until_stdin { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if until_stdin {
        cmd.env(CHILD_UNTIL_STDIN, "1");
    }
    let mut child = cmd.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut line = Vec::new();
        loop {
            line.clear();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            // A line cut off by the kill is not an acknowledgement.
            if line.last() != Some(&b'\n') {
                break;
            }
            let text = String::from_utf8_lossy(&line);
            // libtest may print "test … ... " on the same line first.
            let ev = if text.contains("READY") {
                Event::Ready
            } else if let Some(at) = text.find("ACK ") {
                let mut parts = text[at + 4..].split_whitespace();
                let (Some(id), Some(h)) = (parts.next(), parts.next()) else { continue };
                let Ok(h) = u64::from_str_radix(h, 16) else { continue };
                Event::Ack(id.to_owned(), h)
            } else {
                continue;
            };
            if tx.send(ev).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// True when `bytes` could be the start of one JSON value: parsing stops only
/// because the input ended.
fn is_json_prefix(bytes: &[u8]) -> bool {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(_) => false,
        Err(e) => e.is_eof(),
    }
}

fn torn_side_files(path: &Path) -> BTreeSet<PathBuf> {
    let name = format!("{}.torn-", path.file_name().unwrap().to_string_lossy());
    fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&name))
        .collect()
}

/// The bytes after the last newline (a torn or unterminated last line), if any.
fn unterminated_tail(path: &Path) -> Vec<u8> {
    let bytes = fs::read(path).unwrap();
    let start = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    bytes[start..].to_vec()
}

/// The diagnostics a file may have after a crash: only about its last line,
/// which is torn or lacks its newline.
fn unexpected_diagnostics(path: &Path, diags: &[Diagnostic]) -> Vec<String> {
    let last_line = SessionLog::read_path(path).unwrap().lines().len();
    diags
        .iter()
        .filter(|d| {
            !(d.line == last_line && matches!(d.kind, DiagnosticKind::TornTail { .. } | DiagnosticKind::NoFinalNewline))
        })
        .map(|d| d.to_string())
        .collect()
}

/// Counts acknowledged entries missing or changed in `s`, describing each in `problems`.
fn check_acked(s: &Session, acked: &HashMap<String, u64>, problems: &mut Vec<String>, when: &str) -> usize {
    let mut lost = 0;
    for (id, h) in acked {
        match s.entry_json(id).unwrap() {
            Some(j) if fnv(j) == *h => {}
            Some(j) => {
                lost += 1;
                problems.push(format!("{when}: acknowledged entry {id} changed: {j}"));
            }
            None => {
                lost += 1;
                problems.push(format!("{when}: acknowledged entry {id} is missing"));
            }
        }
    }
    lost
}

fn new_file(dir: &Path, n: usize, acked: &mut HashMap<String, u64>) -> PathBuf {
    let path = dir.join(format!("crash-{n}.jsonl"));
    let mut s = Session::open(&path, OpenMode::WriteOrCreate, writer_opts(Durability::Fsync)).unwrap();
    for m in [user("start"), assistant("ready")] {
        let id = s.append_message(m).unwrap();
        acked.insert(id.clone(), fnv(s.entry_json(&id).unwrap().unwrap()));
    }
    assert!(path.exists(), "the first assistant message materializes the file");
    path
}

#[test]
fn killed_writer_loses_no_acknowledged_entry() {
    let kills = env_number("ARBOR_CRASH_KILLS").unwrap_or(20) as usize;
    let seed = env_number("ARBOR_CRASH_SEED").unwrap_or(0x5eed_c0de);
    let mut rng = Lcg::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mut problems: Vec<String> = vec![];
    let (mut total_acked, mut lost, mut torn_seen, mut unterminated_seen) = (0, 0, 0, 0);
    let (mut simulated, mut repaired_by_parent) = (0, 0);
    let mut acked: HashMap<String, u64> = HashMap::new();
    let mut path = PathBuf::new();

    for k in 0..kills {
        if k % KILLS_PER_FILE == 0 {
            acked.clear();
            path = new_file(dir.path(), k / KILLS_PER_FILE, &mut acked);
            total_acked += acked.len();
        }
        // Mostly kill while appending, sometimes during start-up and open. A kill just
        // after an acknowledgement tends to land inside the next write, not in its fsync.
        let mode = rng.below(8);
        let delay = Duration::from_micros(rng.below(30_001));
        let (mut child, rx) = spawn_writer(&path, rng.next(), Durability::Fsync, false);
        let before = acked.len();
        if mode != 0 {
            match rx.recv_timeout(Duration::from_secs(20)) {
                Ok(Event::Ready) => {}
                other => panic!("kill {k}: the writer did not start: {other:?}"),
            }
        }
        thread::sleep(delay);
        if mode >= 5 {
            if let Ok(Event::Ack(id, h)) = rx.recv_timeout(Duration::from_secs(5)) {
                acked.insert(id, h);
            }
            thread::sleep(Duration::from_micros(rng.below(3_000)));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        for ev in rx.iter() {
            if let Event::Ack(id, h) = ev {
                acked.insert(id, h);
            }
        }
        total_acked += acked.len() - before;

        // Everything acknowledged is there, byte for byte; only the last line may be damaged.
        let when = format!("kill {k} (seed {seed:#x})");
        let s = Session::open(&path, OpenMode::ReadOnly, SessionOptions::default()).unwrap();
        problems.extend(unexpected_diagnostics(&path, s.diagnostics()).into_iter().map(|d| format!("{when}: {d}")));
        lost += check_acked(&s, &acked, &mut problems, &when);
        drop(s);
        let mut tail = unterminated_tail(&path);
        let mut torn = !tail.is_empty() && serde_json::from_slice::<Value>(&tail).is_err();
        torn_seen += usize::from(torn);
        unterminated_seen += usize::from(!tail.is_empty() && !torn);
        // A kill rarely lands inside write(2) itself (microseconds against the milliseconds
        // of encoding and fsync), so now and then tear a line by hand the way such a kill
        // does. Both repairs then run often: by the next open here, or by the next writer,
        // which may itself be killed while repairing.
        if tail.is_empty() && rng.below(4) == 0 {
            let line = format!(
                "{{\"type\":\"message\",\"id\":\"torn{k}\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\
                 \"message\":{{\"role\":\"user\",\"content\":{},\"timestamp\":1}}}}",
                serde_json::to_string(&filler(&mut rng, 200)).unwrap()
            );
            let cut = 1 + rng.below(line.len() as u64 - 1) as usize;
            let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
            f.write_all(&line.as_bytes()[..cut]).unwrap();
            tail = line.as_bytes()[..cut].to_vec();
            torn = true;
            simulated += 1;
        }

        // The killed writer's lock died with it.
        let mut w = match Session::open(&path, OpenMode::Write, writer_opts(Durability::Fsync)) {
            Ok(w) => w,
            Err(e @ TreeError::Locked { .. }) => panic!("{when}: the killed writer still blocks: {e}"),
            Err(e) => panic!("{when}: {e}"),
        };
        // Half the time the parent appends (and repairs the tail) itself; otherwise the
        // next writer repairs it, and may be killed while doing so.
        if rng.below(2) == 0 {
            drop(w);
            continue;
        }
        repaired_by_parent += usize::from(!tail.is_empty());
        let sides_before = torn_side_files(&path);
        let id = w.append_message(user(&format!("after kill {k}"))).unwrap();
        acked.insert(id.clone(), fnv(w.entry_json(&id).unwrap().unwrap()));
        total_acked += 1;
        drop(w);
        let s = Session::open(&path, OpenMode::ReadOnly, SessionOptions::default()).unwrap();
        if !s.diagnostics().is_empty() {
            problems.push(format!("{when}: diagnostics after the next append: {:?}", s.diagnostics()));
        }
        lost += check_acked(&s, &acked, &mut problems, &format!("{when}, after the next append"));
        let new_sides: Vec<PathBuf> = torn_side_files(&path).difference(&sides_before).cloned().collect();
        if torn {
            match new_sides.as_slice() {
                [side] => {
                    let bytes = fs::read(side).unwrap();
                    if bytes != tail {
                        problems.push(format!("{when}: {} does not hold the torn bytes", side.display()));
                    }
                }
                other => problems.push(format!("{when}: expected one new .torn-* file, found {other:?}")),
            }
        } else if !new_sides.is_empty() {
            problems.push(format!("{when}: a .torn-* file without a torn tail: {new_sides:?}"));
        }
    }

    // Every side file holds the start of a JSON line (possibly empty when a writer was
    // killed while moving a tail aside), never anything else.
    let mut side_files = 0;
    for n in 0..kills.div_ceil(KILLS_PER_FILE) {
        for side in torn_side_files(&dir.path().join(format!("crash-{n}.jsonl"))) {
            side_files += 1;
            let bytes = fs::read(&side).unwrap();
            let start = b"{\"type\":\"";
            if !is_json_prefix(&bytes) || !(start.starts_with(&bytes) || bytes.starts_with(start)) {
                problems.push(format!("{} is not the start of a JSON line: {:?}", side.display(), lossy(&bytes)));
            }
        }
    }
    eprintln!(
        "crash: {kills} kills, {total_acked} acknowledged entries, {lost} lost; torn tails left by a kill \
         {torn_seen}, torn by hand {simulated}, whole lines without newline {unterminated_seen}, tails \
         repaired by the next open {repaired_by_parent} (the others by the next writer), .torn-* files \
         {side_files}; seed {seed:#x}; {:.1}s",
        started.elapsed().as_secs_f64()
    );
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
    assert_eq!(lost, 0);
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).chars().take(120).collect()
}

#[test]
fn reader_beside_a_live_writer_never_sees_half_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut acked = HashMap::new();
    let path = new_file(dir.path(), 0, &mut acked);
    // Buffered: the writer appends back to back, so reads often end inside a write.
    let (mut child, rx) = spawn_writer(&path, 7, Durability::Buffered, true);
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(Event::Ready) => {}
        other => panic!("the writer did not start: {other:?}"),
    }
    // Everything any reader ever saw as an entry, and its text.
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut previous: Vec<(String, u64)> = vec![];
    let (mut reads, mut torn_reads, mut unterminated_reads) = (0, 0, 0);
    let mut read_time = Duration::ZERO;
    // Longer in the slow run (CI sets ARBOR_CRASH_KILLS).
    let secs = if env_number("ARBOR_CRASH_KILLS").is_some() { 15 } else { 3 };
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline || reads < 10 {
        reads += 1;
        let t0 = Instant::now();
        let s = Session::open(&path, OpenMode::ReadOnly, SessionOptions::default()).unwrap();
        read_time += t0.elapsed();
        for d in s.diagnostics() {
            match d.kind {
                DiagnosticKind::TornTail { .. } => torn_reads += 1,
                DiagnosticKind::NoFinalNewline => unterminated_reads += 1,
                _ => panic!("read {reads}: unexpected diagnostic {d}"),
            }
            // Only the last line can be incomplete: line 1 is the header, then one line per entry.
            let expected = match d.kind {
                DiagnosticKind::TornTail { .. } => s.len() + 2,
                _ => s.len() + 1,
            };
            assert_eq!(d.line, expected, "read {reads}: {d} is not about the last line; {} entries", s.len());
        }
        let current: Vec<(String, u64)> =
            s.entries_json().map(Result::unwrap).map(|(e, j)| (e.id.clone(), fnv(j))).collect();
        for (e, _) in s.entries_json().map(Result::unwrap) {
            assert!(!matches!(e.kind, EntryKind::Malformed { .. } | EntryKind::Unknown { .. }), "read {reads}: {e:?}");
        }
        assert!(current.starts_with(&previous), "read {reads}: an entry seen earlier changed or vanished");
        for (id, h) in &current {
            assert_eq!(*seen.entry(id.clone()).or_insert(*h), *h, "read {reads}: entry {id} changed");
        }
        previous = current;
    }
    drop(child.stdin.take());
    let status = child.wait().unwrap();
    assert!(status.success(), "the writer failed: {status}");
    for ev in rx.iter() {
        if let Event::Ack(id, h) = ev {
            acked.insert(id, h);
        }
    }
    let s = Session::open(&path, OpenMode::ReadOnly, SessionOptions::default()).unwrap();
    assert!(s.diagnostics().is_empty(), "{:?}", s.diagnostics());
    assert_eq!(s.len(), acked.len(), "every entry on disk was acknowledged, and the other way round");
    let mut problems = vec![];
    check_acked(&s, &acked, &mut problems, "after the writer stopped");
    check_acked(&s, &seen, &mut problems, "seen by a reader");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    eprintln!(
        "reader: {reads} reads ({:.1} ms each) beside a writer of {} entries; torn last line seen \
         {torn_reads} times, a whole unterminated last line {unterminated_reads} times",
        read_time.as_secs_f64() * 1000.0 / f64::from(reads.max(1)),
        acked.len()
    );
}

#[test]
fn a_writer_on_a_missing_path_holds_the_lock_of_that_path() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("new.jsonl");
    let mut first = Session::open(&p, OpenMode::WriteOrCreate, crate::opts()).unwrap();
    assert_eq!(first.session_file(), Some(p.as_path()));
    let second = Session::open(&p, OpenMode::WriteOrCreate, crate::opts()).map(|_| ());
    assert!(
        matches!(second, Err(TreeError::Locked { .. })),
        "a second writer of the same new file was let in: {second:?}; lock files: {:?}",
        fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect::<Vec<_>>()
    );
    assert!(lock_path(&p).exists());
    first.append_message(user("hi")).unwrap();
    first.append_message(assistant("hello")).unwrap();
    assert!(p.exists());
}

#[test]
fn a_line_torn_inside_a_character_is_reported_only_as_a_torn_tail() {
    // A kill inside write(2) stops at a page boundary, which can fall inside a
    // multi-byte character. That is a torn line like any other.
    let dir = tempfile::tempdir().unwrap();
    let path = new_file(dir.path(), 0, &mut HashMap::new());
    let line = "{\"type\":\"message\",\"id\":\"x\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\
                \"message\":{\"role\":\"user\",\"content\":\"déjà vu\",\"timestamp\":1}}";
    let cut = line.find('é').unwrap() + 1;
    fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(&line.as_bytes()[..cut]).unwrap();
    let s = Session::open(&path, OpenMode::ReadOnly, SessionOptions::default()).unwrap();
    let diags: Vec<String> = s.diagnostics().iter().map(|d| d.to_string()).collect();
    assert!(
        matches!(s.diagnostics(), [Diagnostic { line: 4, kind: DiagnosticKind::TornTail { .. }, .. }]),
        "expected only a torn tail on line 4, got {diags:?}"
    );
}

/// A file that grows while it is read: each part is what one `read` sees; an
/// empty part is the end of the file at that moment.
#[derive(Debug)]
struct GrowingFile {
    parts: Vec<Vec<u8>>,
}

impl std::io::Read for GrowingFile {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let Some(part) = self.parts.first_mut() else { return Ok(0) };
        let n = part.len().min(buf.len());
        buf[..n].copy_from_slice(&part[..n]);
        part.drain(..n);
        if part.is_empty() {
            self.parts.remove(0);
        }
        Ok(n)
    }
}

#[test]
fn a_reader_stops_at_the_first_end_of_file() {
    // A reader that reaches the end of the file inside a line being written
    // has read a torn last line. If it then reads on, the file has grown: the
    // rest of that line comes back as a line of its own, the entry is lost
    // from the view and the file looks damaged in the middle.
    let header =
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n";
    let entry = |id: &str, parent: &str| {
        format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:01.000Z\",\
             \"message\":{{\"role\":\"user\",\"content\":\"hello\",\"timestamp\":1}}}}\n"
        )
    };
    let (e1, e2, e3) = (entry("a", "null"), entry("b", "\"a\""), entry("c", "\"b\""));
    let cut = e2.len() / 2;
    let file = GrowingFile {
        parts: vec![
            format!("{header}{e1}{}", &e2[..cut]).into_bytes(),
            vec![],
            format!("{}{e3}", &e2[cut..]).into_bytes(),
        ],
    };
    let log = SessionLog::read(file).unwrap();
    let diags: Vec<String> = log.diagnostics().iter().map(|d| d.to_string()).collect();
    let (entries, _) = log.entries_with_diagnostics();
    let ids: Vec<&str> = entries.iter().map(|(_, e)| e.id.as_str()).collect();
    assert!(
        matches!(log.diagnostics(), [Diagnostic { line: 3, kind: DiagnosticKind::TornTail { .. }, .. }]),
        "expected a snapshot ending in a torn line 3, got {diags:?} and entries {ids:?}"
    );
    assert_eq!(ids, ["a"]);
}
