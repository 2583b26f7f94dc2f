//! Running a child process and reading its wall time and peak resident set size.
//!
//! The peak RSS comes from `wait4`'s `rusage.ru_maxrss`, which the kernel
//! keeps for the child itself (not our own process), so every run is measured
//! on its own. This is the one place in xtask with `unsafe`.
#![allow(unsafe_code)]

use std::io::{self, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

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
    let (status, max_rss_kib, cpu) = wait_with_rusage(&mut child)?;
    let wall = start.elapsed();
    let stdout = match reader {
        Some(handle) => handle.join().map_err(|_| io::Error::other("stdout reader panicked"))??,
        None => Vec::new(),
    };
    Ok(Run { status, wall, max_rss_kib, cpu, stdout })
}

#[cfg(unix)]
fn wait_with_rusage(child: &mut Child) -> io::Result<(ExitStatus, u64, Duration)> {
    use std::os::unix::process::ExitStatusExt;
    let pid = libc::pid_t::try_from(child.id()).map_err(io::Error::other)?;
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is a plain C struct for which all-zero bytes are valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: both pointers are to live, exclusively borrowed locals of the
        // right types; `pid` is our own unreaped child, so we reap exactly it.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
    let max_rss = u64::try_from(usage.ru_maxrss).unwrap_or(0);
    // Linux and the BSDs report KiB; macOS reports bytes.
    let max_rss_kib = if cfg!(target_os = "macos") { max_rss / 1024 } else { max_rss };
    let time = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    let cpu = time(usage.ru_utime) + time(usage.ru_stime);
    Ok((ExitStatus::from_raw(status), max_rss_kib, cpu))
}

#[cfg(not(unix))]
fn wait_with_rusage(child: &mut Child) -> io::Result<(ExitStatus, u64, Duration)> {
    Ok((child.wait()?, 0, Duration::ZERO))
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
