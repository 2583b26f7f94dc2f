//! Which model a command talks to: the built-in providers plus a pi user's
//! own (pi's `models.json` in pi's agent directory), and the choice between
//! `--model`, the settings, and the model the session last used, with
//! `--base-url` applied to whichever it is.

use anyhow::{anyhow, Result};

use arbor_agent::model::pi_models::{models_json_path, PiModels};
use arbor_agent::{Api, ModelInfo, ProviderConfig, ProviderRegistry};
use arbor_tree::{paths, Session};

/// The providers a command knows, and what reading pi's file had to say.
#[derive(Debug, Clone)]
pub struct Models {
    /// Built-in providers and pi's.
    pub registry: ProviderRegistry,
    /// Warnings to show once (a `models.json` that does not parse, models left out).
    pub notices: Vec<String>,
}

impl Models {
    /// The built-in providers, plus those of pi's `models.json`
    /// (`$PI_CODING_AGENT_DIR/models.json`, else `~/.pi/agent/models.json`)
    /// when it exists. A broken file is a warning and adds nothing.
    pub fn load() -> Models {
        let mut registry = ProviderRegistry::builtin();
        let mut notices = vec![];
        let path = models_json_path(&paths::agent_dir());
        match PiModels::load(&path) {
            Ok(Some(mut pi)) => {
                pi.apply(&mut registry);
                notices.extend(pi.notes.iter().map(|n| format!("{}: {n}", path.display())));
            }
            Ok(None) => {}
            Err(e) => notices.push(format!("warning: {e} (its providers are ignored)")),
        }
        Models { registry, notices }
    }

    /// Points `provider` at `url`; an unknown provider becomes an
    /// OpenAI-compatible server there.
    pub fn set_base_url(&mut self, provider: &str, url: &str) {
        if !self.registry.set_base_url(provider, url) {
            self.registry.insert(ProviderConfig::new(provider, Api::OpenAiCompletions, url));
        }
    }

    /// `PROVIDER/MODEL` as a model; an unknown provider is an error listing the known ones.
    pub fn parse(&self, spec: &str) -> Result<ModelInfo> {
        self.registry.parse_model(spec).ok_or_else(|| {
            let known: Vec<&str> = self.registry.names().collect();
            anyhow!(
                "unknown model {spec:?}: use PROVIDER/MODEL with a known provider ({}), or set a base URL",
                known.join(", ")
            )
        })
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
                arbor_context::session_context(session).model.map(|r| format!("{}/{}", r.provider, r.model_id))
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
