//! `arbor` in a real terminal (tmux) for the chat and selector tests: a
//! pane whose output is logged byte for byte, keys and text sent to it, and
//! waits on what the screen, the log or a file must show (never a fixed time).

use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use crate::chat::DEADLINE;
use crate::tui::Tmux;

/// `arbor ARGS` in a tmux pane of `w`×`h` in `dir`; stdout goes to `out.txt`,
/// the exit code to `rc`, everything the pane is sent (escape sequences and
/// all) to `pane-NAME.log`, and the pane stays open after the exit.
pub(crate) struct Term {
    pub(crate) tmux: Tmux,
    pub(crate) dir: PathBuf,
    pub(crate) log: PathBuf,
}
impl Term {
    pub(crate) fn start(dir: &Path, name: &str, size: (u16, u16), commands: &[String]) -> Term {
        Term::start_with(dir, name, size, &[], commands)
    }

    /// The same, with these environment variables (`NAME=value`) exported too.
    pub(crate) fn start_with(dir: &Path, name: &str, size: (u16, u16), env: &[&str], commands: &[String]) -> Term {
        Term::launch(dir, name, size, env, commands, "> out.txt")
    }

    /// The same, with standard output left on the terminal too (for what a command prints there).
    pub(crate) fn start_on_terminal(dir: &Path, name: &str, size: (u16, u16), commands: &[String]) -> Term {
        Term::launch(dir, name, size, &[], commands, "")
    }

    fn launch(dir: &Path, name: &str, (w, h): (u16, u16), env: &[&str], commands: &[String], redirect: &str) -> Term {
        let script: Vec<String> =
            commands.iter().map(|c| format!("{bin} {c}", bin = env!("CARGO_BIN_EXE_arbor"))).collect();
        // The commands wait for `go`, made once the pane's output is logged.
        let cmd = format!(
            "cd {dir} && until [ -e go-{name} ]; do sleep 0.05; done && unset ANTHROPIC_API_KEY OPENAI_API_KEY ARBOR_CONFIG PI_CODING_AGENT_DIR && export ARBOR_IDS=counter HOME=/nonexistent-home ARBOR_SESSIONS_DIR={dir}/sessions ARBOR_CACHE_DIR={dir}/cache TERM=xterm-256color {env} && {{ {script}; }} {redirect}; echo $? > rc; sleep 600",
            dir = dir.display(),
            script = script.join(" && "),
            env = env.join(" "),
        );
        let tmux = Tmux { socket: dir.join(format!("tmux-{name}.sock")) };
        tmux.run(&["new-session", "-d", "-s", "tui", "-x", &w.to_string(), "-y", &h.to_string(), &cmd]);
        let log = dir.join(format!("pane-{name}.log"));
        tmux.run(&["pipe-pane", "-t", "tui", &format!("cat >> {}", log.display())]);
        std::fs::write(dir.join(format!("go-{name}")), "").unwrap();
        Term { tmux, dir: dir.to_owned(), log }
    }

    /// Waits until the pane has been sent `what` (a frame that came and went
    /// since counts: a spinner shown for a moment is found here, where the
    /// screen may never show it when captured).
    pub(crate) fn wait_sent(&self, what: &str, ok: impl Fn(&str) -> bool) {
        let start = Instant::now();
        loop {
            let sent = std::fs::read(&self.log).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
            if ok(&sent) {
                return;
            }
            assert!(start.elapsed() < DEADLINE, "waited for {what}; the pane was sent:\n{sent}");
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Everything the pane was sent so far, escape sequences and all.
    pub(crate) fn sent(&self) -> Vec<u8> {
        std::fs::read(&self.log).unwrap_or_default()
    }

    /// Waits until the screen satisfies `ok`; panics with the screen after [`DEADLINE`].
    pub(crate) fn wait(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.tmux.screen();
            if ok(&s) {
                return s;
            }
            assert!(start.elapsed() < DEADLINE, "waited for {what}; the screen is:\n{s}");
            thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn wait_for(&self, what: &str) -> String {
        self.wait(what, |s| s.contains(what))
    }

    pub(crate) fn text(&self, text: &str) {
        self.tmux.text(text);
    }

    pub(crate) fn keys(&self, keys: &[&str]) {
        self.tmux.keys(keys);
    }

    /// Waits until the prompt line is exactly `text` (trailing spaces aside).
    pub(crate) fn wait_prompt(&self, text: &str) -> String {
        let want = format!("> {text}");
        self.wait(&format!("the prompt {text:?}"), |s| s.lines().any(|l| l.trim_end() == want.trim_end()))
    }

    /// Presses `keys`, then waits until the prompt line is exactly `text`.
    pub(crate) fn keys_then_prompt(&self, keys: &[&str], text: &str) -> String {
        self.keys(keys);
        self.wait_prompt(text)
    }

    /// Types `text` and waits until the prompt shows it, then presses Enter.
    pub(crate) fn send(&self, text: &str) {
        self.text(text);
        self.wait(&format!("the prompt to show {text:?}"), |s| {
            s.lines().any(|l| l.starts_with("> ") && l.contains(text))
        });
        self.keys(&["Enter"]);
    }

    /// Presses Escape twice, again every few seconds while the screen does not show `what`.
    pub(crate) fn double_escape_until(&self, what: &str) -> String {
        self.press_until(&["Escape", "Escape"], what, Duration::from_secs(3))
    }

    /// Presses `keys` (one by one), again after `every` while the screen
    /// does not show `what`: for keys whose effect may need more presses
    /// (scrolling) or whose timing matters (a double Escape).
    pub(crate) fn press_until(&self, keys: &[&str], what: &str, every: Duration) -> String {
        let start = Instant::now();
        loop {
            for k in keys {
                self.keys(&[k]);
            }
            let tried = Instant::now();
            while tried.elapsed() < every {
                let s = self.tmux.screen();
                if s.contains(what) {
                    return s;
                }
                thread::sleep(Duration::from_millis(50));
            }
            assert!(start.elapsed() < DEADLINE, "{keys:?} never showed {what:?}:\n{}", self.tmux.screen());
        }
    }

    /// Waits for the exit code.
    pub(crate) fn exit_code(&self) -> String {
        let start = Instant::now();
        loop {
            if let Ok(s) = std::fs::read_to_string(self.dir.join("rc")) {
                if s.ends_with('\n') {
                    return s.trim().to_owned();
                }
            }
            assert!(start.elapsed() < DEADLINE, "no exit; the screen is:\n{}", self.tmux.screen());
            thread::sleep(Duration::from_millis(50));
        }
    }
}
