//! pi's `models.json` (in pi's agent directory): custom providers and models,
//! and overrides of built-in ones, added to a [`ProviderRegistry`] so a pi
//! user's models work in Arbor as they are.
//!
//! Read as pi reads it: JSON with `//` comments and trailing commas allowed;
//! `providers.NAME` with `baseUrl`, `api`, `apiKey` (a variable's name,
//! `!command` or the key itself) and `models` (`id`, `api`, `baseUrl`,
//! `reasoning`, `contextWindow` (default 128000), `maxTokens` (default
//! 16384), `cost`), or only overrides of a built-in provider (`baseUrl`,
//! `apiKey`, `modelOverrides` with `contextWindow`, `maxTokens`, `reasoning`,
//! `cost`). A provider defining models of its own needs `baseUrl`, `apiKey`
//! and an `api`, as in pi. What Arbor does not use (`headers`, `compat`,
//! `input`, `name`, `thinkingLevelMap`, `authHeader`) is ignored; a model
//! whose API Arbor does not speak is left out with a note.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{Api, ModelCost, ModelError, ModelInfo, ProviderConfig, ProviderRegistry};
use crate::config_file::read_config_file;

/// pi's defaults for a custom model.
const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
const DEFAULT_MAX_TOKENS: u64 = 16_384;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CostEntry {
    input: Option<f64>,
    output: Option<f64>,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
}

impl CostEntry {
    fn over(&self, base: ModelCost) -> ModelCost {
        ModelCost {
            input: self.input.unwrap_or(base.input),
            output: self.output.unwrap_or(base.output),
            cache_read: self.cache_read.unwrap_or(base.cache_read),
            cache_write: self.cache_write.unwrap_or(base.cache_write),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModelEntry {
    id: String,
    api: Option<String>,
    base_url: Option<String>,
    reasoning: Option<bool>,
    context_window: Option<u64>,
    max_tokens: Option<u64>,
    cost: Option<CostEntry>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OverrideEntry {
    reasoning: Option<bool>,
    context_window: Option<u64>,
    max_tokens: Option<u64>,
    cost: Option<CostEntry>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProviderEntry {
    base_url: Option<String>,
    api: Option<String>,
    api_key: Option<String>,
    #[serde(default)]
    models: Vec<ModelEntry>,
    #[serde(default)]
    model_overrides: Map<String, Value>,
}

/// The providers of a `models.json`, in file order.
#[derive(Debug, Clone, Default)]
pub struct PiModels {
    providers: Vec<(String, ProviderEntry)>,
    /// Models left out, one line each (an API Arbor does not speak).
    pub notes: Vec<String>,
}

/// The path of pi's `models.json` in an agent directory.
pub fn models_json_path(agent_dir: &Path) -> PathBuf {
    agent_dir.join("models.json")
}

/// Removes `//` comments outside strings and commas before `}` or `]`, as
/// pi does before parsing its JSON files.
pub fn strip_json_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                out.push(c);
                while let Some(d) = chars.next() {
                    out.push(d);
                    match d {
                        '\\' => out.extend(chars.next()),
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '/' if chars.peek() == Some(&'/') => {
                while chars.peek().is_some_and(|&d| d != '\n') {
                    chars.next();
                }
            }
            ',' => {
                // A comma whose next non-blank character closes an object or array goes.
                let rest: String = chars.clone().take_while(|d| d.is_whitespace()).collect();
                let after = chars.clone().nth(rest.chars().count());
                if !matches!(after, Some('}' | ']')) {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

impl PiModels {
    /// Reads `path`; `Ok(None)` when it does not exist. A file that cannot be
    /// read (not a regular file, too large: see [`read_config_file`]), does
    /// not parse or breaks pi's rules is an error naming it.
    pub fn load(path: &Path) -> Result<Option<PiModels>, ModelError> {
        let text = match read_config_file(path) {
            Ok(t) => t,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(bad(path, e.reason())),
        };
        PiModels::parse(&text).map(Some).map_err(|m| bad(path, m))
    }

    /// Parses the text of a `models.json`.
    pub fn parse(text: &str) -> Result<PiModels, String> {
        let root: Value = serde_json::from_str(&strip_json_comments(text)).map_err(|e| e.to_string())?;
        let providers = root.get("providers").and_then(Value::as_object).ok_or("no \"providers\" object")?;
        let builtin = ProviderRegistry::builtin();
        let mut out = PiModels::default();
        for (name, v) in providers {
            let entry: ProviderEntry =
                serde_json::from_value(v.clone()).map_err(|e| format!("provider {name}: {e}"))?;
            validate(name, &entry, builtin.get(name).is_some())?;
            out.providers.push((name.clone(), entry));
        }
        Ok(out)
    }

    /// Adds the providers and models to `registry`: a known provider gets
    /// the base URL, API and key given and the models; a new one is added.
    pub fn apply(&mut self, registry: &mut ProviderRegistry) {
        for (name, entry) in &self.providers {
            let provider_api = entry.api.as_deref().and_then(Api::parse);
            if registry.get(name).is_none() {
                let api = provider_api
                    .or_else(|| entry.models.iter().find_map(|m| m.api.as_deref().and_then(Api::parse)))
                    .unwrap_or(Api::OpenAiCompletions);
                registry.insert(ProviderConfig::new(name, api, entry.base_url.as_deref().unwrap_or_default()));
            }
            let Some(p) = registry.get_mut(name) else { continue };
            if let Some(url) = &entry.base_url {
                p.base_url = url.trim_end_matches('/').to_owned();
            }
            if let Some(api) = provider_api {
                p.api = api;
            }
            if let Some(a) = entry.api.as_deref().filter(|a| Api::parse(a).is_none()) {
                p.unsupported_api = Some(a.to_owned());
            }
            if entry.api_key.is_some() {
                p.api_key.clone_from(&entry.api_key);
            }
            for (id, v) in &entry.model_overrides {
                let Ok(o) = serde_json::from_value::<OverrideEntry>(v.clone()) else { continue };
                let mut m = ModelInfo::new(name, id, p.api, &p.base_url);
                m.key_env.clone_from(&p.key_env);
                m.api_key.clone_from(&p.api_key);
                m.context_window = o.context_window;
                m.max_output_tokens = o.max_tokens;
                m.reasoning = o.reasoning.unwrap_or(false);
                m.cost = o.cost.as_ref().map_or(ModelCost::default(), |c| c.over(ModelCost::default()));
                p.models.retain(|k| k.id != *id);
                p.models.push(m);
            }
            for def in &entry.models {
                let api = match def.api.as_deref() {
                    None => p.api,
                    Some(a) => match Api::parse(a) {
                        Some(api) => api,
                        None => {
                            self.notes
                                .push(format!("model {name}/{}: API {a:?} is not one Arbor speaks; left out", def.id));
                            p.unsupported.push((def.id.clone(), a.to_owned()));
                            continue;
                        }
                    },
                };
                if def.api.is_none() && entry.api.as_deref().is_some_and(|a| Api::parse(a).is_none()) {
                    let a = entry.api.as_deref().unwrap_or_default();
                    self.notes.push(format!("model {name}/{}: API {a:?} is not one Arbor speaks; left out", def.id));
                    p.unsupported.push((def.id.clone(), a.to_owned()));
                    continue;
                }
                let url = def.base_url.as_deref().unwrap_or(&p.base_url);
                let mut m = ModelInfo::new(name, &def.id, api, url);
                m.key_env.clone_from(&p.key_env);
                m.api_key.clone_from(&p.api_key);
                m.context_window = Some(def.context_window.unwrap_or(DEFAULT_CONTEXT_WINDOW));
                m.max_output_tokens = Some(def.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS));
                m.reasoning = def.reasoning.unwrap_or(false);
                m.cost = def.cost.as_ref().map_or(ModelCost::default(), |c| c.over(ModelCost::default()));
                p.models.retain(|k| k.id != def.id);
                p.models.push(m);
            }
        }
    }
}

fn bad(path: &Path, message: String) -> ModelError {
    ModelError::BadModelsFile { path: path.to_owned(), message }
}

/// pi's checks of one provider.
fn validate(name: &str, p: &ProviderEntry, builtin: bool) -> Result<(), String> {
    if p.models.is_empty() {
        if p.base_url.is_none() && p.api_key.is_none() && p.model_overrides.is_empty() && p.api.is_none() {
            return Err(format!("provider {name}: must specify \"baseUrl\", \"modelOverrides\" or \"models\""));
        }
        return Ok(());
    }
    if !builtin {
        if p.base_url.is_none() {
            return Err(format!("provider {name}: \"baseUrl\" is required when defining custom models"));
        }
        if p.api_key.is_none() {
            return Err(format!("provider {name}: \"apiKey\" is required when defining custom models"));
        }
    }
    for m in &p.models {
        if m.id.is_empty() {
            return Err(format!("provider {name}: a model has an empty \"id\""));
        }
        if !builtin && p.api.is_none() && m.api.is_none() {
            return Err(format!("provider {name}, model {}: no \"api\" (set it on the provider or the model)", m.id));
        }
        if m.context_window == Some(0) {
            return Err(format!("provider {name}, model {}: invalid contextWindow", m.id));
        }
        if m.max_tokens == Some(0) {
            return Err(format!("provider {name}, model {}: invalid maxTokens", m.id));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_go_strings_stay() {
        let text =
            "{\n  // a comment\n  \"a\": \"http://x//y\", // after\n  \"b\": [1, 2,],\n  \"c\": \"q\\\"//\",\n}\n";
        let v: Value = serde_json::from_str(&strip_json_comments(text)).unwrap();
        assert_eq!(v, serde_json::json!({"a": "http://x//y", "b": [1, 2], "c": "q\"//"}));
    }

    #[test]
    fn custom_providers_models_and_overrides() {
        let mut pi = PiModels::parse(
            r#"{"providers": {
                "local": {"baseUrl": "http://127.0.0.1:8080/v1/", "api": "openai-completions", "apiKey": "LOCAL_KEY",
                          "models": [{"id": "small", "contextWindow": 4096, "reasoning": true},
                                     {"id": "plain"},
                                     {"id": "other", "api": "google-generative-ai"}]},
                "anthropic": {"baseUrl": "https://proxy.example/", "modelOverrides": {"claude-x": {"contextWindow": 50000}}}
            }}"#,
        )
        .unwrap();
        let mut r = ProviderRegistry::builtin();
        pi.apply(&mut r);
        let small = r.resolve("local", "small").unwrap();
        assert_eq!(small.api, Api::OpenAiCompletions);
        assert_eq!(small.base_url, "http://127.0.0.1:8080/v1");
        assert_eq!((small.context_window, small.max_output_tokens, small.reasoning), (Some(4096), Some(16384), true));
        assert_eq!(small.api_key.as_deref(), Some("LOCAL_KEY"));
        assert_eq!(r.resolve("local", "plain").unwrap().context_window, Some(128_000));
        // An id models.json does not list is still the provider's.
        assert_eq!(r.resolve("local", "anything").unwrap().api_key.as_deref(), Some("LOCAL_KEY"));
        assert!(pi.notes.iter().any(|n| n.contains("local/other")), "{:?}", pi.notes);
        // Left out means left out: never sent over the provider's other API.
        assert!(r.resolve("local", "other").is_none());
        assert_eq!(r.unsupported("local", "other").unwrap(), "API \"google-generative-ai\" is not one Arbor speaks");
        let claude = r.resolve("anthropic", "claude-x").unwrap();
        assert_eq!((claude.base_url.as_str(), claude.context_window), ("https://proxy.example", Some(50000)));
        assert_eq!(r.resolve("anthropic", "claude-y").unwrap().base_url, "https://proxy.example");
    }

    #[test]
    fn pis_rules_are_errors() {
        for (text, says) in [
            (r#"{"providers": {"x": {"models": [{"id": "m"}]}}}"#, "\"baseUrl\" is required"),
            (r#"{"providers": {"x": {"baseUrl": "u", "models": [{"id": "m"}]}}}"#, "\"apiKey\" is required"),
            (r#"{"providers": {"x": {"baseUrl": "u", "apiKey": "k", "models": [{"id": "m"}]}}}"#, "no \"api\""),
            (r#"{"providers": {"x": {}}}"#, "must specify"),
            (r#"{"providers": {"x": {"models": [{"id": 3}]}}}"#, "provider x"),
            (r#"{"nope": 1}"#, "no \"providers\""),
            ("{", "EOF"),
        ] {
            let e = PiModels::parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn key_configs_resolve_as_pi_resolves_them() {
        use super::super::resolve_key_config;
        assert_eq!(resolve_key_config("sk-literal-key").as_deref(), Some("sk-literal-key"));
        assert_eq!(resolve_key_config("PATH").as_deref(), std::env::var("PATH").ok().as_deref());
        assert_eq!(resolve_key_config("!echo '  from a command '").as_deref(), Some("from a command"));
        assert_eq!(resolve_key_config("!exit 3"), None);
    }
}
