//! `arbor chat`'s settings: pi's own `settings.json`, then Arbor's file (TOML
//! or JSON, with pi's setting names) over it, then the flags over both.
//!
//! pi's file is `settings.json` in pi's agent directory
//! (`$PI_CODING_AGENT_DIR`, else `~/.pi/agent`); Arbor takes what it uses
//! from it (`defaultProvider`/`defaultModel` for new sessions,
//! `defaultThinkingLevel`, `doubleEscapeAction`, `treeFilterMode`,
//! `compaction`, `branchSummary`), ignores the rest, and warns about a value
//! it cannot use. Arbor's file: `--config FILE`, else `$ARBOR_CONFIG`, else
//! `$XDG_CONFIG_HOME/arbor/config.toml` (or `~/.config/arbor/config.toml`)
//! when it exists. An unknown key there is an error naming the file and the
//! key, so a typo never goes unnoticed; an invalid `treeFilterMode` falls
//! back to `default` as in pi.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use serde::Deserialize;
use serde_json::Value;

use arbor_agent::config_file::read_config_file;
use arbor_agent::model::pi_models::strip_json_comments;
use arbor_tree::paths;

use crate::ui::tui::FilterMode;

/// What a double Escape on an empty prompt opens (pi's `doubleEscapeAction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DoubleEscape {
    /// The tree selector (pi's default).
    #[default]
    Tree,
    /// The user-message selector of /branch (omp calls it `branch`, pi `fork`).
    Branch,
    /// Nothing.
    None,
}

impl DoubleEscape {
    fn parse(s: &str) -> Option<DoubleEscape> {
        match s {
            "tree" => Some(DoubleEscape::Tree),
            "branch" | "fork" => Some(DoubleEscape::Branch),
            "none" => Some(DoubleEscape::None),
            _ => None,
        }
    }
}

/// `[compaction]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompactionFile {
    /// Compact automatically when the context nears the window (default true).
    pub enabled: Option<bool>,
    /// Tokens kept free for the reply (default 16384).
    pub reserve_tokens: Option<u64>,
    /// Recent tokens kept verbatim (default 20000).
    pub keep_recent_tokens: Option<u64>,
}

/// `[branchSummary]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BranchSummaryFile {
    /// Tokens kept free for a branch summary (default 16384).
    pub reserve_tokens: Option<u64>,
    /// Never ask whether to summarize: /tree always moves without a summary (default false).
    pub skip_prompt: Option<bool>,
}

/// The settings file as written.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SettingsFile {
    /// `PROVIDER/MODEL`.
    pub model: Option<String>,
    /// The provider's base URL.
    pub base_url: Option<String>,
    /// The model's context window in tokens (default 128000).
    pub context_window: Option<u64>,
    /// The model reasons (thinking levels are sent to it).
    pub reasoning: Option<bool>,
    /// A system prompt for every request.
    pub system_prompt: Option<String>,
    /// The thinking level of new sessions (default `off`).
    pub default_thinking_level: Option<String>,
    /// `tree`, `branch` (or `fork`), `none`.
    pub double_escape_action: Option<String>,
    /// The tree selector's initial filter.
    pub tree_filter_mode: Option<String>,
    /// A hooks file (see docs/hooks.md); relative to the settings file.
    pub hooks: Option<PathBuf>,
    /// Compaction.
    pub compaction: Option<CompactionFile>,
    /// Branch summaries.
    pub branch_summary: Option<BranchSummaryFile>,
    /// The longest a model request may take, streaming included, in seconds (default 600).
    pub reply_timeout_seconds: Option<u64>,
    /// The most bytes one reply may have (default 32 MiB).
    pub max_reply_bytes: Option<u64>,
}

/// The settings in effect.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The file they came from, if any.
    pub source: Option<PathBuf>,
    /// `PROVIDER/MODEL`, if set (Arbor's file: it wins over the session's model).
    pub model: Option<String>,
    /// pi's `defaultProvider/defaultModel`: the model of a session that has none.
    pub default_model: Option<String>,
    /// Base URL override.
    pub base_url: Option<String>,
    /// Context window override.
    pub context_window: Option<u64>,
    /// Reasoning model.
    pub reasoning: bool,
    /// System prompt.
    pub system_prompt: Option<String>,
    /// Thinking level for new sessions.
    pub default_thinking_level: String,
    /// Double-Escape action.
    pub double_escape: DoubleEscape,
    /// Initial tree filter.
    pub tree_filter: FilterMode,
    /// Hooks file.
    pub hooks: Option<PathBuf>,
    /// Auto-compaction on.
    pub compaction_enabled: bool,
    /// Compaction reserve.
    pub compaction_reserve_tokens: u64,
    /// Compaction keep-recent.
    pub keep_recent_tokens: u64,
    /// Branch summary reserve.
    pub branch_reserve_tokens: u64,
    /// Skip the summary question.
    pub skip_summary_prompt: bool,
    /// `replyTimeoutSeconds`, when set.
    pub reply_timeout_secs: Option<u64>,
    /// `maxReplyBytes`, when set.
    pub max_reply_bytes: Option<u64>,
    /// Warnings to show once (an invalid filter mode).
    pub warnings: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            source: None,
            model: None,
            default_model: None,
            base_url: None,
            context_window: None,
            reasoning: false,
            system_prompt: None,
            default_thinking_level: "off".to_owned(),
            double_escape: DoubleEscape::Tree,
            tree_filter: FilterMode::Default,
            hooks: None,
            compaction_enabled: true,
            compaction_reserve_tokens: 16384,
            keep_recent_tokens: 20000,
            branch_reserve_tokens: 16384,
            skip_summary_prompt: false,
            reply_timeout_secs: None,
            max_reply_bytes: None,
            warnings: vec![],
        }
    }
}

/// The thinking levels pi knows.
pub const THINKING_LEVELS: [&str; 6] = ["off", "minimal", "low", "medium", "high", "xhigh"];

fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::home_dir().map(|h| h.join(".config")))?;
    let p = base.join("arbor").join("config.toml");
    p.is_file().then_some(p)
}

impl Settings {
    /// Loads the settings: pi's `settings.json` when it exists, then over it
    /// `explicit`, else `$ARBOR_CONFIG`, else Arbor's default path when it exists.
    pub fn load(explicit: Option<&Path>) -> Result<Settings> {
        let mut s = Settings::default();
        s.apply_pi(&paths::agent_dir().join("settings.json"));
        let path = match explicit {
            Some(p) => Some(p.to_owned()),
            None => std::env::var_os("ARBOR_CONFIG").filter(|v| !v.is_empty()).map(PathBuf::from).or_else(default_path),
        };
        if let Some(p) = path {
            s.apply_file(&p)?;
        }
        Ok(s)
    }

    /// Reads one settings file (JSON when it ends in `.json`, else TOML) over the defaults.
    #[cfg(test)]
    pub fn from_file(path: &Path) -> Result<Settings> {
        let mut s = Settings::default();
        s.apply_file(path)?;
        Ok(s)
    }

    /// Applies Arbor's settings file at `path` over these settings.
    fn apply_file(&mut self, path: &Path) -> Result<()> {
        let text = read_config_file(path).map_err(|e| anyhow::anyhow!("cannot read settings: {e}"))?;
        let file: SettingsFile = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{}: bad settings: {e}", path.display()))?
        } else {
            toml::from_str(&text)
                .map_err(|e| anyhow::anyhow!("{}: bad settings: {}", path.display(), e.message().trim()))?
        };
        self.apply(file, path)?;
        self.source = Some(path.to_owned());
        Ok(())
    }

    /// Applies what Arbor uses of pi's `settings.json` at `path`, if it
    /// exists: a value Arbor cannot use is a warning, never an error (the
    /// file is pi's).
    fn apply_pi(&mut self, path: &Path) {
        let text = match read_config_file(path) {
            Ok(t) => t,
            Err(e) if e.is_not_found() => return,
            Err(e) => {
                self.warnings.push(format!("warning: {e}; pi's settings are ignored"));
                return;
            }
        };
        let name = path.display();
        let parsed: Result<Value, _> = serde_json::from_str(&strip_json_comments(&text));
        let Ok(Value::Object(v)) = parsed else {
            self.warnings.push(format!("warning: {name}: not a JSON object; pi's settings are ignored"));
            return;
        };
        let string = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        if let (Some(p), Some(m)) = (string("defaultProvider"), string("defaultModel")) {
            self.default_model = Some(format!("{p}/{m}"));
        }
        let mut file = SettingsFile {
            default_thinking_level: string("defaultThinkingLevel"),
            double_escape_action: string("doubleEscapeAction"),
            tree_filter_mode: string("treeFilterMode"),
            ..SettingsFile::default()
        };
        let section = |k: &str| v.get(k).cloned().filter(Value::is_object);
        file.compaction = section("compaction").and_then(|c| serde_json::from_value(lenient(c)).ok());
        file.branch_summary = section("branchSummary").and_then(|b| serde_json::from_value(lenient(b)).ok());
        let before = self.clone();
        if let Err(e) = self.apply(file, path) {
            *self = before;
            self.warnings.push(format!("warning: {e}; pi's settings are ignored"));
        }
    }

    fn apply(&mut self, f: SettingsFile, path: &Path) -> Result<()> {
        let s = self;
        let name = path.display();
        s.model = f.model.or(s.model.take());
        s.base_url = f.base_url.or(s.base_url.take());
        s.context_window = f.context_window.or(s.context_window);
        s.reasoning = f.reasoning.unwrap_or(s.reasoning);
        s.system_prompt = f.system_prompt.or(s.system_prompt.take());
        if let Some(level) = f.default_thinking_level {
            if !THINKING_LEVELS.contains(&level.as_str()) {
                bail!(
                    "{name}: bad settings: defaultThinkingLevel {level:?} is not one of {}",
                    THINKING_LEVELS.join(", ")
                );
            }
            s.default_thinking_level = level;
        }
        if let Some(a) = f.double_escape_action {
            s.double_escape = DoubleEscape::parse(&a).ok_or_else(|| {
                anyhow::anyhow!("{name}: bad settings: doubleEscapeAction {a:?} is not one of tree, branch, fork, none")
            })?;
        }
        if let Some(m) = f.tree_filter_mode {
            match FilterMode::named(&m) {
                Some(mode) => s.tree_filter = mode,
                None => s.warnings.push(format!("{name}: treeFilterMode {m:?} is not a filter mode; using default")),
            }
        }
        if let Some(h) = f.hooks {
            s.hooks = Some(if h.is_relative() { path.parent().unwrap_or(Path::new(".")).join(h) } else { h });
        }
        if let Some(c) = f.compaction {
            s.compaction_enabled = c.enabled.unwrap_or(s.compaction_enabled);
            s.compaction_reserve_tokens = c.reserve_tokens.unwrap_or(s.compaction_reserve_tokens);
            s.keep_recent_tokens = c.keep_recent_tokens.unwrap_or(s.keep_recent_tokens);
        }
        if let Some(b) = f.branch_summary {
            s.branch_reserve_tokens = b.reserve_tokens.unwrap_or(s.branch_reserve_tokens);
            s.skip_summary_prompt = b.skip_prompt.unwrap_or(s.skip_summary_prompt);
        }
        s.reply_timeout_secs = f.reply_timeout_seconds.or(s.reply_timeout_secs);
        s.max_reply_bytes = f.max_reply_bytes.or(s.max_reply_bytes);
        Ok(())
    }
}

/// Keeps only the keys Arbor knows of a section of pi's settings (pi has more).
fn lenient(section: Value) -> Value {
    const KNOWN: [&str; 4] = ["enabled", "reserveTokens", "keepRecentTokens", "skipPrompt"];
    match section {
        Value::Object(m) => Value::Object(m.into_iter().filter(|(k, _)| KNOWN.contains(&k.as_str())).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        (dir, p)
    }

    #[test]
    fn toml_with_every_key() {
        let (dir, p) = write(
            "config.toml",
            r#"
model = "openai/gpt-4o-mini"
baseUrl = "http://127.0.0.1:8080/v1"
contextWindow = 32000
reasoning = true
systemPrompt = "Be brief."
defaultThinkingLevel = "medium"
doubleEscapeAction = "branch"
treeFilterMode = "user-only"
hooks = "hooks.toml"

[compaction]
enabled = false
reserveTokens = 1000
keepRecentTokens = 2000

[branchSummary]
reserveTokens = 3000
skipPrompt = true
"#,
        );
        let s = Settings::from_file(&p).unwrap();
        assert_eq!(s.model.as_deref(), Some("openai/gpt-4o-mini"));
        assert_eq!(s.base_url.as_deref(), Some("http://127.0.0.1:8080/v1"));
        assert_eq!(s.context_window, Some(32000));
        assert!(s.reasoning);
        assert_eq!(s.default_thinking_level, "medium");
        assert_eq!(s.double_escape, DoubleEscape::Branch);
        assert_eq!(s.tree_filter, FilterMode::UserOnly);
        assert_eq!(s.hooks, Some(dir.path().join("hooks.toml")));
        assert!(!s.compaction_enabled);
        assert_eq!((s.compaction_reserve_tokens, s.keep_recent_tokens), (1000, 2000));
        assert_eq!(s.branch_reserve_tokens, 3000);
        assert!(s.skip_summary_prompt);
        assert!(s.warnings.is_empty());
    }

    #[test]
    fn json_settings_and_defaults() {
        let (_d, p) = write("settings.json", r#"{"doubleEscapeAction": "none"}"#);
        let s = Settings::from_file(&p).unwrap();
        assert_eq!(s.double_escape, DoubleEscape::None);
        assert_eq!(s.default_thinking_level, "off");
        assert!(s.compaction_enabled);
        assert_eq!(s.tree_filter, FilterMode::Default);
    }

    #[test]
    fn errors_name_the_file_and_the_key() {
        let (_d, p) = write("c.toml", "modle = \"x/y\"\n");
        let e = Settings::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("c.toml: bad settings") && e.contains("modle"), "{e}");
        let (_d, p) = write("c.toml", "doubleEscapeAction = \"twice\"\n");
        let e = Settings::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("doubleEscapeAction \"twice\""), "{e}");
        let (_d, p) = write("c.toml", "defaultThinkingLevel = \"max\"\n");
        assert!(Settings::from_file(&p).unwrap_err().to_string().contains("defaultThinkingLevel"));
    }

    #[test]
    fn an_invalid_filter_mode_falls_back_with_a_warning() {
        let (_d, p) = write("c.toml", "treeFilterMode = \"sideways\"\n");
        let s = Settings::from_file(&p).unwrap();
        assert_eq!(s.tree_filter, FilterMode::Default);
        assert_eq!(s.warnings.len(), 1);
    }
}
