//! `arbor chat` and pi's own CLI take turns on one session: one pi agent
//! directory (`$PI_CODING_AGENT_DIR`) whose `models.json` names the model
//! server of the test on 127.0.0.1 and whose `settings.json` makes it the
//! default. Arbor writes the session (no model flags), pi continues it
//! (`pi -p PROMPT --session FILE --no-tools`), bare `arbor` resumes it, pi
//! continues again. After each turn Arbor and pi read the same context from
//! the file, and each request the model server got carries the whole
//! conversation so far, whichever tool sent it.
//!
//! pi is its npm package as `cargo xtask pi` installs it (once, into a
//! cache folder) and prints it. Without node the test skips with one line on
//! stderr, unless `ARBOR_REQUIRE_PI` is set (CI), where it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::chat::{path_json, script_with, shape};
use crate::model_server::ModelServer;
use crate::{arbor, json, stderr, stdout};

/// Set when a missing pi is a failure, not a skip.
const REQUIRED_ENV: &str = "ARBOR_REQUIRE_PI";
const PACKAGE: &str = "@mariozechner/pi-coding-agent";

/// pi's installed package.
struct Pi {
    package: PathBuf,
    manifest: Value,
}

impl Pi {
    /// pi's package as `cargo xtask pi` installs it, or `None` without
    /// node (after one line on stderr). Panics when pi is required.
    fn find(test: &str) -> Option<Pi> {
        let node = Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
        if !node {
            assert!(
                std::env::var_os(REQUIRED_ENV).is_none(),
                "{test}: {REQUIRED_ENV} is set but node is not on the PATH"
            );
            eprintln!("{test}: skipped: node is not on the PATH, so pi's CLI cannot run here (CI has node)");
            return None;
        }
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let o = Command::new(cargo)
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
            .args(["xtask", "pi"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{test}: cargo xtask pi failed:\n{}", stderr(&o));
        let package = PathBuf::from(stdout(&o).trim()).join("node_modules").join(PACKAGE);
        let text = std::fs::read_to_string(package.join("package.json")).unwrap();
        Some(Pi { package, manifest: serde_json::from_str(&text).unwrap() })
    }

    /// The file of a `package.json` field (`bin.pi`, `main`).
    fn file(&self, field: &str) -> PathBuf {
        let rel = field.split('.').fold(&self.manifest, |v, key| &v[key]);
        self.package.join(rel.as_str().unwrap_or_else(|| panic!("{PACKAGE}'s package.json has no {field}")))
    }

    /// `pi -p PROMPT --session FILE --no-tools` in `dir`, with `env`: its output.
    fn turn(&self, dir: &Path, env: &[(&str, &str)], file: &Path, prompt: &str) -> String {
        let o = Command::new("node")
            .arg(self.file("bin.pi"))
            .args(["-p", prompt, "--session", file.to_str().unwrap(), "--no-tools"])
            .env("HOME", dir)
            .env("PI_OFFLINE", "1")
            .env("PI_TELEMETRY", "0")
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .envs(env.iter().copied())
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "pi -p {prompt:?} failed ({}):\n{}\n{}", o.status, stdout(&o), stderr(&o));
        stdout(&o)
    }

    /// How pi reads `file`: `{context, llm}` (its `buildSessionContext` and
    /// `convertToLlm`).
    fn reads(&self, dir: &Path, file: &Path) -> Value {
        let script = dir.join("pi_reads.mjs");
        std::fs::write(&script, include_str!("pi_reads.mjs")).unwrap();
        let o = Command::new("node").arg(&script).arg(self.file("main")).arg(file).output().unwrap();
        assert!(o.status.success(), "pi_reads.mjs failed:\n{}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    }
}

/// pi's agent directory: a `local` provider at `server` (key in
/// `LOCAL_LLM_KEY`) with one model `small`, the default in `settings.json`.
/// The window is big enough that neither tool compacts.
fn agent_dir(dir: &Path, server: &ModelServer) -> PathBuf {
    let agent = dir.join("pi-agent");
    std::fs::create_dir_all(&agent).unwrap();
    let models = serde_json::json!({"providers": {"local": {
        "baseUrl": server.openai(), "api": "openai-completions", "apiKey": "LOCAL_LLM_KEY",
        "models": [{"id": "small", "contextWindow": 200000, "maxTokens": 4096}]
    }}});
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    std::fs::write(agent.join("settings.json"), r#"{"defaultProvider": "local", "defaultModel": "small"}"#).unwrap();
    agent
}

/// Arbor and pi read `file` the same way: the context (messages, model,
/// thinking level) and the messages converted for the model.
fn both_read_the_same(pi: &Pi, dir: &Path, file: &Path, after: &str) {
    let theirs = pi.reads(dir, file);
    let f = file.to_str().unwrap();
    assert_eq!(json(&arbor(&["context", f, "--json"])), theirs["context"], "context after {after}");
    assert_eq!(json(&arbor(&["context", f, "--llm", "--json"])), theirs["llm"], "messages for the model after {after}");
}

/// The conversation of a request, system prompt left out (pi sends one, Arbor none).
fn conversation(request: &crate::model_server::Request) -> Vec<String> {
    request.transcript().into_iter().filter(|m| !m.starts_with("system: ")).collect()
}

#[test]
fn arbor_and_pis_cli_take_turns_on_one_session() {
    let Some(pi) = Pi::find("arbor_and_pis_cli_take_turns_on_one_session") else { return };
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let agent = agent_dir(&dir, &server);
    let cache = dir.join("cache");
    // pi's layout: sessions under the agent directory, for both tools.
    let env = [
        ("PI_CODING_AGENT_DIR", agent.to_str().unwrap()),
        ("LOCAL_LLM_KEY", "sekrit"),
        ("ARBOR_SESSIONS_DIR", ""),
        ("ARBOR_CACHE_DIR", cache.to_str().unwrap()),
    ];
    let mut said: Vec<String> = vec![];
    let mut turn = |who: &str, prompt: &str, out: &str| {
        assert!(out.contains(&format!("echo: {prompt}")), "{who}'s turn {prompt:?}:\n{out}");
        let request = server.turns().last().cloned().unwrap();
        said.push(format!("user: {prompt}"));
        assert_eq!(conversation(&request), said, "{who} sent the whole conversation");
        assert_eq!(request.body["model"], "small", "{who} used the model of models.json");
        assert_eq!(request.auth.as_deref(), Some("Bearer sekrit"), "{who} used the key models.json names");
        said.push(format!("assistant: echo: {prompt}"));
    };

    // Arbor writes: a new session with the model of pi's settings, no flags.
    let (status, out, err) = script_with(&dir, &["chat"], &["--new"], &env, &["one from arbor", "/quit"]);
    assert!(status.success(), "{err}");
    turn("arbor", "one from arbor", &out);
    let file = PathBuf::from(err.lines().find_map(|l| l.strip_prefix("arbor: New session: ")).unwrap());
    assert!(file.starts_with(agent.join("sessions")), "{}", file.display());
    both_read_the_same(&pi, &dir, &file, "arbor's first turn");

    // pi continues.
    let out = pi.turn(&dir, &env, &file, "two from pi");
    turn("pi", "two from pi", &out);
    both_read_the_same(&pi, &dir, &file, "pi's first turn");

    // Bare `arbor` resumes the latest session of the directory: the one pi wrote last.
    let (status, out, err) = script_with(&dir, &[], &[], &env, &["three from arbor", "/quit"]);
    assert!(status.success(), "{err}");
    assert!(!err.contains("Could not restore") && !err.contains("unknown provider"), "{err}");
    turn("arbor", "three from arbor", &out);
    both_read_the_same(&pi, &dir, &file, "arbor's second turn");

    // pi continues again.
    let out = pi.turn(&dir, &env, &file, "four from pi");
    turn("pi", "four from pi", &out);
    both_read_the_same(&pi, &dir, &file, "pi's second turn");

    let messages: Vec<String> = shape(&path_json(&file))
        .into_iter()
        .filter(|s| s.starts_with("user:") || s.starts_with("assistant:"))
        .collect();
    let want: Vec<String> = said.iter().map(|s| s.replacen(": ", ":", 1)).collect();
    assert_eq!(messages, want, "one session, four turns, in order");
    assert_eq!(server.requests().len(), 4, "no summaries, no retries: {:?}", server.requests());
}
