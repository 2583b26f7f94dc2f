//! Which model a command talks to: the built-in providers plus a pi user's
//! own (pi's `models.json` in pi's agent directory), and the choice between
//! `--model`, the settings, and the model the session last used, with
//! `--base-url` applied to whichever it is; pi's default model
//! (`defaultProvider`/`defaultModel` of its `settings.json`) when the
//! session's cannot be used.

use anyhow::{anyhow, Result};
use serde_json::Value;

use arbor_agent::config_file::read_config_file;
use arbor_agent::model::pi_models::{models_json_path, strip_json_comments, PiModels};
use arbor_agent::{Api, ModelInfo, ProviderConfig, ProviderRegistry};
use arbor_tree::{paths, Session};

/// The providers a command knows, and what reading pi's file had to say.
#[derive(Debug, Clone)]
pub struct Models {
    /// Built-in providers and pi's.
    pub registry: ProviderRegistry,
    /// Warnings to show once (a `models.json` that does not parse, models left out).
    pub notices: Vec<String>,
    /// Why pi's `models.json` was ignored, if it was (named again when a model is not found).
    broken: Option<String>,
}

/// pi's default model (`defaultProvider/defaultModel` of `settings.json` in
/// pi's agent directory), if it names one. The file is read as the chat's
/// settings read it; a file that cannot be read gives none (the chat warns
/// about it).
pub fn pi_default_model() -> Option<String> {
    let text = read_config_file(&paths::agent_dir().join("settings.json")).ok()?;
    let v: Value = serde_json::from_str(&strip_json_comments(&text)).ok()?;
    let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    Some(format!("{}/{}", field("defaultProvider")?, field("defaultModel")?))
}

impl Models {
    /// The built-in providers, plus those of pi's `models.json`
    /// (`$PI_CODING_AGENT_DIR/models.json`, else `~/.pi/agent/models.json`)
    /// when it exists. A broken file is a warning and adds nothing.
    pub fn load() -> Models {
        let mut registry = ProviderRegistry::builtin();
        let mut notices = vec![];
        let mut broken = None;
        let path = models_json_path(&paths::agent_dir());
        match PiModels::load(&path) {
            Ok(Some(mut pi)) => {
                pi.apply(&mut registry);
                notices.extend(pi.notes.iter().map(|n| format!("{}: {n}", path.display())));
            }
            Ok(None) => {}
            Err(e) => {
                notices.push(format!("warning: {e} (its providers are ignored)"));
                broken = Some(e.to_string());
            }
        }
        Models { registry, notices, broken }
    }

    /// Points `provider` at `url`; an unknown provider becomes an
    /// OpenAI-compatible server there.
    pub fn set_base_url(&mut self, provider: &str, url: &str) {
        if !self.registry.set_base_url(provider, url) {
            self.registry.insert(ProviderConfig::new(provider, Api::OpenAiCompletions, url));
        }
    }

    /// `PROVIDER/MODEL` as a model; an unknown provider is an error listing
    /// the known ones (and naming pi's `models.json` when it was ignored).
    pub fn parse(&self, spec: &str) -> Result<ModelInfo> {
        if let Some(why) = spec.split_once('/').and_then(|(p, id)| self.registry.unsupported(p, id)) {
            anyhow::bail!("model {spec:?} cannot be used: its {why}");
        }
        self.registry.parse_model(spec).ok_or_else(|| {
            let known: Vec<&str> = self.registry.names().collect();
            let why = match &self.broken {
                Some(e) => format!(" ({e}: its providers are ignored)"),
                None => String::new(),
            };
            anyhow!(
                "unknown model {spec:?}: use PROVIDER/MODEL with a known provider ({}), or set a base URL{why}",
                known.join(", ")
            )
        })
    }

    /// The fallback model `spec` names (pi's default model), or a notice
    /// saying why it cannot be one.
    pub fn fallback(&mut self, spec: Option<&str>) -> Option<ModelInfo> {
        let spec = spec?;
        match self.parse(spec) {
            Ok(m) => Some(m),
            Err(e) => {
                self.notices.push(format!("The default model cannot be used: {e}"));
                None
            }
        }
    }

    /// The model to use: `spec` (`--model`, else the settings'); without
    /// one but with a base URL, the model the session last used. The base
    /// URL goes to that model's provider. `None`: no model was named, and
    /// the agent restores the session's own (or has none).
    pub fn choose(
        &mut self,
        spec: Option<&str>,
        base_url: Option<&str>,
        session: &Session,
    ) -> Result<Option<ModelInfo>> {
        let spec = match spec {
            Some(s) => Some(s.to_owned()),
            None if base_url.is_some() => {
                arbor_context::session_context(session)?.model.map(|r| format!("{}/{}", r.provider, r.model_id))
            }
            None => None,
        };
        let Some(spec) = spec else { return Ok(None) };
        if let Some(url) = base_url {
            let provider = spec.split_once('/').map_or(spec.as_str(), |(p, _)| p);
            self.set_base_url(provider, url);
        }
        self.parse(&spec).map(Some)
    }
}
