//! Running a child process and reading its wall time and peak resident set size.
//!
//! The peak RSS comes from `wait4`'s `rusage.ru_maxrss` (through the `wait4`
//! crate's safe wrapper), which the kernel keeps for the child itself (not our
//! own process), so every run is measured on its own.

use std::io::{self, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use wait4::Wait4;

/// How one run of a command went.
#[derive(Debug)]
pub struct Run {
    pub status: ExitStatus,
    pub wall: Duration,
    /// Peak resident set size in KiB (0 where the platform does not say).
    pub max_rss_kib: u64,
    /// User plus system CPU time of the child (zero where the platform does not say).
    pub cpu: Duration,
    /// Captured stdout (empty unless asked for).
    pub stdout: Vec<u8>,
}

/// Runs `cmd` to completion (stdin closed, stderr inherited, stdout captured or discarded).
pub fn run_measured(cmd: &mut Command, capture_stdout: bool) -> io::Result<Run> {
    cmd.stdin(Stdio::null()).stderr(Stdio::inherit());
    cmd.stdout(if capture_stdout { Stdio::piped() } else { Stdio::null() });
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    // Drain stdout on a thread so a chatty child cannot block on a full pipe.
    let reader = child.stdout.take().map(|mut out| {
        thread::spawn(move || {
            let mut buf = Vec::new();
            out.read_to_end(&mut buf).map(|_| buf)
        })
    });
    let (status, max_rss_kib, cpu) = wait_with_rusage(child)?;
    let wall = start.elapsed();
    let stdout = match reader {
        Some(handle) => handle.join().map_err(|_| io::Error::other("stdout reader panicked"))??,
        None => Vec::new(),
    };
    Ok(Run { status, wall, max_rss_kib, cpu, stdout })
}

/// Waits for `child` and reads what `wait4` says it used (peak RSS and CPU
/// time are zero where the platform does not say).
fn wait_with_rusage(child: Child) -> io::Result<(ExitStatus, u64, Duration)> {
    let used = child.wait4()?;
    let cpu = used.rusage.utime + used.rusage.stime;
    Ok((used.status, used.rusage.maxrss / 1024, cpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn measures_a_child_and_captures_its_stdout() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo hello"]);
        let run = run_measured(&mut cmd, true).unwrap();
        assert!(run.status.success());
        assert_eq!(run.stdout, b"hello\n");
        assert!(run.max_rss_kib > 0);
    }

    #[test]
    #[cfg(unix)]
    fn reports_failure_status() {
        let run = run_measured(Command::new("sh").args(["-c", "exit 3"]), false).unwrap();
        assert_eq!(run.status.code(), Some(3));
    }
}
