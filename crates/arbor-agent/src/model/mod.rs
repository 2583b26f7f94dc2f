//! Model clients over real HTTP: OpenAI-compatible Chat Completions, the
//! OpenAI Responses API and Anthropic Messages, all streamed (server-sent
//! events).
//!
//! A [`ModelClient`] is bound to one [`ModelInfo`] and key; its
//! [`ModelClient::complete`] sends pi-shaped LLM messages and returns pi's
//! assistant message JSON ([`AssistantReply`]), and [`ModelClient::stream`]
//! does the same while handing each text and thinking delta to a
//! [`StreamSink`], turning failures and aborts into recorded replies as
//! pi-ai does. Provider defaults live in a [`ProviderRegistry`]; keys come
//! from [`Credentials`]. Every request carries the conversation as pi-ai
//! sends it ([`transform::request_messages`]: aborted and failed replies left
//! out).

mod anthropic;
mod error;
mod http;
mod openai;
pub mod pi_models;
mod reply;
mod responses;
pub mod transform;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use arbor_log::{Clock, SystemClock};
use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use anthropic::AnthropicClient;
pub use error::ModelError;
pub use openai::OpenAiClient;
pub use reply::AssistantReply;
pub use responses::ResponsesClient;

/// The wire protocol of a model (pi's `api` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Api {
    /// OpenAI Chat Completions (`POST {base}/chat/completions`): OpenAI,
    /// OpenRouter, vLLM, llama.cpp, Ollama and other compatible servers.
    OpenAiCompletions,
    /// Anthropic Messages (`POST {base}/v1/messages`).
    AnthropicMessages,
    /// OpenAI Responses (`POST {base}/responses`): OpenAI's newer endpoint (vLLM and others serve it too).
    OpenAiResponses,
}

impl Api {
    /// pi's name for the API (`openai-completions`, `anthropic-messages`, `openai-responses`).
    pub fn as_str(self) -> &'static str {
        match self {
            Api::OpenAiCompletions => "openai-completions",
            Api::AnthropicMessages => "anthropic-messages",
            Api::OpenAiResponses => "openai-responses",
        }
    }

    /// Parses pi's name (also `openai` and `anthropic`).
    pub fn parse(s: &str) -> Option<Api> {
        match s {
            "openai-completions" | "openai" | "openai-compatible" => Some(Api::OpenAiCompletions),
            "anthropic-messages" | "anthropic" => Some(Api::AnthropicMessages),
            "openai-responses" => Some(Api::OpenAiResponses),
            _ => None,
        }
    }
}

/// Prices in dollars per million tokens (all zero when unknown).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModelCost {
    /// Input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Cache reads.
    pub cache_read: f64,
    /// Cache writes.
    pub cache_write: f64,
}

/// One model at one provider: what a client needs to call it and what the
/// summarizer needs to budget for it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// The provider name as sessions record it (`anthropic`, `openai`, …).
    pub provider: String,
    /// The model id as sessions record it.
    pub id: String,
    /// The wire protocol.
    pub api: Api,
    /// The base URL: for Chat Completions it includes the version
    /// (`https://api.openai.com/v1`), for Anthropic it does not
    /// (`https://api.anthropic.com`), as in the providers' own SDKs.
    pub base_url: String,
    /// The context window in tokens (`None`: 128000 is assumed, as pi does).
    pub context_window: Option<u64>,
    /// A cap on output tokens, if the model has a known one.
    pub max_output_tokens: Option<u64>,
    /// True for a reasoning model (compaction summaries then ask for high reasoning).
    pub reasoning: bool,
    /// Prices, for the `usage.cost` of replies.
    pub cost: ModelCost,
    /// The environment variable that holds the key.
    pub key_env: String,
    /// The key as pi's `models.json` gives it (wins over `key_env`): the name
    /// of a variable holding it, `!command` printing it, or the key itself
    /// (see [`resolve_key_config`]).
    pub api_key: Option<String>,
}

impl ModelInfo {
    /// A model with no known limits, reasoning off, and the provider's usual key variable.
    pub fn new(provider: &str, id: &str, api: Api, base_url: &str) -> ModelInfo {
        ModelInfo {
            provider: provider.to_owned(),
            id: id.to_owned(),
            api,
            base_url: base_url.trim_end_matches('/').to_owned(),
            context_window: None,
            max_output_tokens: None,
            reasoning: false,
            cost: ModelCost::default(),
            key_env: default_key_env(provider),
            api_key: None,
        }
    }

    /// Sets the context window.
    pub fn with_context_window(mut self, tokens: u64) -> Self {
        self.context_window = Some(tokens);
        self
    }

    /// Marks the model as a reasoning model.
    pub fn with_reasoning(mut self, reasoning: bool) -> Self {
        self.reasoning = reasoning;
        self
    }

    /// True when the base URL is on this machine (`localhost`, `127.0.0.0/8`,
    /// `[::1]`): such servers (llama.cpp, Ollama, vLLM) are called without a key
    /// when none is configured.
    pub fn is_local(&self) -> bool {
        let rest = self.base_url.split_once("://").map_or(self.base_url.as_str(), |(_, r)| r);
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let host = if let Some(v6) = authority.strip_prefix('[') {
            v6.split(']').next().unwrap_or("")
        } else {
            authority.split(':').next().unwrap_or("")
        };
        host.eq_ignore_ascii_case("localhost")
            || host == "::1"
            || host.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
    }
}

/// The environment variable of a provider's key: `OPENAI_API_KEY`,
/// `ANTHROPIC_API_KEY`, …, `<PROVIDER>_API_KEY` in general.
pub fn default_key_env(provider: &str) -> String {
    let upper: String =
        provider.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    format!("{upper}_API_KEY")
}

/// A provider's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    /// The provider name.
    pub name: String,
    /// Its protocol.
    pub api: Api,
    /// Its base URL (see [`ModelInfo::base_url`]).
    pub base_url: String,
    /// The environment variable of its key.
    pub key_env: String,
    /// The key as configured (pi's `apiKey`, see [`ModelInfo::api_key`]).
    pub api_key: Option<String>,
    /// Models with known limits (pi's `models.json`); any other id is a model
    /// with the provider's defaults.
    pub models: Vec<ModelInfo>,
    /// Models of an API Arbor does not speak (id, API): never resolved, so
    /// they are never sent over another API.
    pub unsupported: Vec<(String, String)>,
    /// The provider's own API, when Arbor does not speak it: then only its
    /// listed models resolve.
    pub unsupported_api: Option<String>,
}

impl ProviderConfig {
    /// A provider with the usual key variable and no known models.
    pub fn new(name: &str, api: Api, base_url: &str) -> ProviderConfig {
        ProviderConfig {
            name: name.to_owned(),
            api,
            base_url: base_url.trim_end_matches('/').to_owned(),
            key_env: default_key_env(name),
            api_key: None,
            models: vec![],
            unsupported: vec![],
            unsupported_api: None,
        }
    }
}

/// Known providers: how a `(provider, modelId)` from a session becomes a [`ModelInfo`].
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderRegistry {
    providers: Vec<ProviderConfig>,
}

impl Default for ProviderRegistry {
    fn default() -> Self {
        ProviderRegistry::builtin()
    }
}

impl ProviderRegistry {
    /// `anthropic`, `openai`, `openrouter` and `ollama` (local, keyless).
    pub fn builtin() -> ProviderRegistry {
        ProviderRegistry {
            providers: vec![
                ProviderConfig::new("anthropic", Api::AnthropicMessages, "https://api.anthropic.com"),
                ProviderConfig::new("openai", Api::OpenAiCompletions, "https://api.openai.com/v1"),
                ProviderConfig::new("openrouter", Api::OpenAiCompletions, "https://openrouter.ai/api/v1"),
                ProviderConfig::new("ollama", Api::OpenAiCompletions, "http://127.0.0.1:11434/v1"),
            ],
        }
    }

    /// No providers.
    pub fn empty() -> ProviderRegistry {
        ProviderRegistry { providers: vec![] }
    }

    /// Adds a provider, replacing one of the same name.
    pub fn insert(&mut self, provider: ProviderConfig) {
        self.providers.retain(|p| p.name != provider.name);
        self.providers.push(provider);
    }

    /// Points a known provider (and its known models) at another base URL;
    /// false when it is unknown.
    pub fn set_base_url(&mut self, provider: &str, base_url: &str) -> bool {
        match self.providers.iter_mut().find(|p| p.name == provider) {
            Some(p) => {
                p.base_url = base_url.trim_end_matches('/').to_owned();
                for m in &mut p.models {
                    m.base_url.clone_from(&p.base_url);
                }
                true
            }
            None => false,
        }
    }

    /// A provider by name, to change.
    pub fn get_mut(&mut self, provider: &str) -> Option<&mut ProviderConfig> {
        self.providers.iter_mut().find(|p| p.name == provider)
    }

    /// The providers' names, in the order they were added.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.providers.iter().map(|p| p.name.as_str())
    }

    /// A provider by name.
    pub fn get(&self, provider: &str) -> Option<&ProviderConfig> {
        self.providers.iter().find(|p| p.name == provider)
    }

    /// Why the known provider's model cannot be used, when its API is one
    /// Arbor does not speak (`API "google-generative-ai" is not one Arbor speaks`).
    pub fn unsupported(&self, provider: &str, model_id: &str) -> Option<String> {
        let p = self.get(provider)?;
        if p.models.iter().any(|m| m.id == model_id) {
            return None;
        }
        let api = p.unsupported.iter().find(|(id, _)| id == model_id).map(|(_, a)| a).or(p.unsupported_api.as_ref())?;
        Some(format!("API {api:?} is not one Arbor speaks"))
    }

    /// A model from `provider/model-id` (the model id may contain more `/`),
    /// when the provider is known.
    pub fn parse_model(&self, spec: &str) -> Option<ModelInfo> {
        let (provider, id) = spec.split_once('/')?;
        self.resolve(provider, id)
    }

    /// The model `model_id` at `provider`, when the provider is known: a
    /// known model with its limits, else one with the provider's defaults;
    /// `None` for a model of an API Arbor does not speak ([`ProviderRegistry::unsupported`]).
    pub fn resolve(&self, provider: &str, model_id: &str) -> Option<ModelInfo> {
        let p = self.get(provider)?;
        if let Some(m) = p.models.iter().find(|m| m.id == model_id) {
            return Some(m.clone());
        }
        if self.unsupported(provider, model_id).is_some() {
            return None;
        }
        let mut m = ModelInfo::new(provider, model_id, p.api, &p.base_url);
        m.key_env = p.key_env.clone();
        m.api_key = p.api_key.clone();
        Some(m)
    }
}

/// Resolves a key as pi's `models.json` gives it: `!command` runs the
/// command with `sh -c` (10 s at most) and takes its trimmed output; any
/// other value is the value of the environment variable of that name when
/// it is set and not empty, else the value itself. `None` when a command
/// fails or prints nothing.
pub fn resolve_key_config(config: &str) -> Option<String> {
    if let Some(command) = config.strip_prefix('!') {
        return run_key_command(command);
    }
    match std::env::var(config) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => Some(config.to_owned()),
    }
}

/// Runs a key command once per process (its answer is kept, as pi keeps it).
fn run_key_command(command: &str) -> Option<String> {
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<String, Option<String>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(command).cloned()) {
        return hit;
    }
    let value = key_command_output(command);
    if let Ok(mut c) = cache.lock() {
        c.insert(command.to_owned(), value.clone());
    }
    value
}

fn key_command_output(command: &str) -> Option<String> {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let mut out = String::new();
    child.stdout.take()?.read_to_string(&mut out).ok()?;
    let out = out.trim();
    (status.success() && !out.is_empty()).then(|| out.to_owned())
}

/// Where API keys come from: explicit keys by provider, then (optionally) the
/// provider's environment variable. Never printed.
#[derive(Clone, Default)]
pub struct Credentials {
    keys: HashMap<String, String>,
    read_env: bool,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut providers: Vec<&String> = self.keys.keys().collect();
        providers.sort();
        f.debug_struct("Credentials").field("providers", &providers).field("read_env", &self.read_env).finish()
    }
}

impl Credentials {
    /// Keys from the environment (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, …).
    pub fn from_env() -> Credentials {
        Credentials { keys: HashMap::new(), read_env: true }
    }

    /// No keys at all (tests; local servers).
    pub fn none() -> Credentials {
        Credentials::default()
    }

    /// Adds an explicit key for a provider (it wins over the environment).
    pub fn with_key(mut self, provider: &str, key: &str) -> Credentials {
        self.keys.insert(provider.to_owned(), key.to_owned());
        self
    }

    /// The key for `model`, if there is one: an explicit key, else the one
    /// its configuration names ([`ModelInfo::api_key`]), else (when reading
    /// the environment) the provider's variable.
    pub fn api_key(&self, model: &ModelInfo) -> Option<String> {
        if let Some(k) = self.keys.get(&model.provider) {
            return Some(k.clone());
        }
        if let Some(config) = &model.api_key {
            return resolve_key_config(config);
        }
        if !self.read_env {
            return None;
        }
        std::env::var(&model.key_env).ok().filter(|k| !k.trim().is_empty())
    }

    /// The key for `model`; a local server may go without one, anything else
    /// fails with `No API key for <provider>`.
    pub fn require(&self, model: &ModelInfo) -> Result<Option<String>, ModelError> {
        match self.api_key(model) {
            Some(k) => Ok(Some(k)),
            None if model.is_local() => Ok(None),
            None => Err(ModelError::NoApiKey { provider: model.provider.clone(), env_var: model.key_env.clone() }),
        }
    }
}

/// Timeouts, retries and the clock of a client.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Time to open a connection (default 10 s).
    pub connect_timeout: Duration,
    /// Time for a whole request, retries and streaming included (default 10 min).
    pub request_timeout: Duration,
    /// Longest silence while a response streams (default 2 min).
    pub idle_timeout: Duration,
    /// The most bytes a response may have, streamed or not (default 32 MiB):
    /// a server that never ends its stream is stopped here, and by
    /// `request_timeout`, whichever comes first.
    pub max_reply_bytes: usize,
    /// Retries after a 429, a 5xx or a failed connection (default 3).
    pub max_retries: u32,
    /// The first backoff; it doubles per retry (default 1 s).
    pub initial_backoff: Duration,
    /// The longest backoff (default 30 s).
    pub max_backoff: Duration,
    /// The longest `Retry-After` honoured; a longer one ends the retries (default 60 s).
    pub max_retry_after: Duration,
    /// The clock of reply timestamps.
    pub clock: Arc<dyn Clock>,
    /// Told of every retry before its wait (a UI shows `Retrying (n/m) in Ns`).
    pub on_retry: Option<RetryObserver>,
}

/// A retry a client is about to make, after a 429, a 5xx or a failed connection.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryNotice {
    /// This retry's number, from 1.
    pub attempt: u32,
    /// The most retries ([`ClientOptions::max_retries`]).
    pub max: u32,
    /// The wait before it.
    pub delay: Duration,
    /// Why (`HTTP 503: busy`, `could not connect`).
    pub reason: String,
}

/// Receives [`RetryNotice`]s.
#[derive(Clone)]
pub struct RetryObserver(pub Arc<dyn Fn(RetryNotice) + Send + Sync>);

impl fmt::Debug for RetryObserver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RetryObserver")
    }
}

/// The default of [`ClientOptions::max_reply_bytes`].
pub const DEFAULT_MAX_REPLY_BYTES: usize = 32 * 1024 * 1024;

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(600),
            idle_timeout: Duration::from_secs(120),
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
            max_retries: 3,
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            clock: Arc::new(SystemClock),
            on_retry: None,
        }
    }
}

/// How hard a reasoning model should think.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasoningEffort {
    /// A little.
    Low,
    /// Some.
    Medium,
    /// A lot (what compaction asks for).
    High,
}

impl ReasoningEffort {
    /// The OpenAI `reasoning_effort` value.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }

    /// The Anthropic thinking budget, in tokens.
    pub fn budget_tokens(self) -> u64 {
        match self {
            ReasoningEffort::Low => 2048,
            ReasoningEffort::Medium => 8192,
            ReasoningEffort::High => 16384,
        }
    }
}

/// One completion request: pi's `Context` plus the options the summarizer uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompletionRequest {
    /// The system prompt.
    pub system_prompt: Option<String>,
    /// pi LLM messages (`user`, `assistant`, `toolResult`).
    pub messages: Vec<Value>,
    /// The most tokens to generate.
    pub max_tokens: Option<u64>,
    /// Reasoning to ask for (ignored by models that do not reason).
    pub reasoning: Option<ReasoningEffort>,
}

/// The `errorMessage` of an aborted Anthropic reply, as the reference records
/// it (the Anthropic SDK's message, with a full stop).
pub const REQUEST_ABORTED: &str = "Request was aborted.";

/// The `errorMessage` of an aborted reply for `api`, as the reference records
/// them: `Request was aborted.` from Anthropic, `Request was aborted` from
/// OpenAI (both seen in the recorded pi sessions).
pub fn aborted_message(api: Api) -> &'static str {
    match api {
        Api::AnthropicMessages => REQUEST_ABORTED,
        Api::OpenAiCompletions | Api::OpenAiResponses => "Request was aborted",
    }
}

/// A piece of a reply as it streams.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamDelta {
    /// Answer text.
    Text(String),
    /// Reasoning text.
    Thinking(String),
}

/// Receives deltas while a reply streams.
pub type StreamSink = Arc<dyn Fn(StreamDelta) + Send + Sync>;

/// A model behind an HTTP API.
#[async_trait]
pub trait ModelClient: Send + Sync + fmt::Debug {
    /// The model this client calls.
    fn model(&self) -> &ModelInfo;

    /// Sends `request` and returns the assistant message in pi's JSON shape.
    ///
    /// A complete answer is `Ok`, whatever its stop reason (`stop`, `length`,
    /// `toolUse`). Transport and HTTP failures are `Err`; cancelling `cancel`
    /// drops the request at once and gives [`ModelError::Cancelled`].
    async fn complete(
        &self,
        request: &CompletionRequest,
        cancel: CancellationToken,
    ) -> Result<AssistantReply, ModelError>;

    /// Streams a reply, calling `sink` for each text or thinking delta.
    ///
    /// Never fails, like pi-ai's stream: a failure is a reply with
    /// `stopReason` `"error"` and the error as `errorMessage`; cancelling
    /// `cancel` drops the request and gives a reply with `stopReason`
    /// `"aborted"` and `errorMessage` [`aborted_message`]. Both keep the
    /// content and usage received so far.
    ///
    /// The default calls [`ModelClient::complete`] and hands the whole text
    /// to `sink` as one delta (a failed call keeps nothing).
    async fn stream(
        &self,
        request: &CompletionRequest,
        cancel: CancellationToken,
        sink: Option<StreamSink>,
    ) -> AssistantReply {
        match self.complete(request, cancel).await {
            Ok(reply) => {
                let text = reply.text("");
                if let (Some(sink), false) = (sink, text.is_empty()) {
                    sink(StreamDelta::Text(text));
                }
                reply
            }
            Err(e) => {
                let reply = AssistantReply::from_error(self.model(), &e, SystemClock.now_ms());
                if e.is_cancelled() {
                    reply.with_error_message(aborted_message(self.model().api))
                } else {
                    reply
                }
            }
        }
    }
}

/// The client for `model`'s API.
pub fn client_for(
    model: ModelInfo,
    api_key: Option<String>,
    options: ClientOptions,
) -> Result<Arc<dyn ModelClient>, ModelError> {
    Ok(match model.api {
        Api::OpenAiCompletions => Arc::new(OpenAiClient::new(model, api_key, options)?),
        Api::AnthropicMessages => Arc::new(AnthropicClient::new(model, api_key, options)?),
        Api::OpenAiResponses => Arc::new(ResponsesClient::new(model, api_key, options)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_base_urls() {
        let m = |url: &str| ModelInfo::new("p", "m", Api::OpenAiCompletions, url);
        assert!(m("http://localhost:8080/v1").is_local());
        assert!(m("http://127.0.0.1:11434/v1").is_local());
        assert!(m("http://127.8.9.1").is_local());
        assert!(m("http://[::1]:8000/v1").is_local());
        assert!(m("http://user@localhost:1/").is_local());
        assert!(!m("https://api.openai.com/v1").is_local());
        assert!(!m("http://localhost.example.com/v1").is_local());
        assert!(!m("http://10.0.0.1/v1").is_local());
    }

    #[test]
    fn model_specs() {
        let r = ProviderRegistry::builtin();
        let m = r.parse_model("openrouter/anthropic/claude-sonnet-4.5").unwrap();
        assert_eq!(
            (m.provider.as_str(), m.id.as_str(), m.api),
            ("openrouter", "anthropic/claude-sonnet-4.5", Api::OpenAiCompletions)
        );
        assert_eq!(m.key_env, "OPENROUTER_API_KEY");
        assert!(r.parse_model("nowhere/x").is_none());
        assert!(r.parse_model("no-slash").is_none());
    }

    #[test]
    fn key_env_names() {
        assert_eq!(default_key_env("openai"), "OPENAI_API_KEY");
        assert_eq!(default_key_env("my-llm"), "MY_LLM_API_KEY");
    }

    #[test]
    fn missing_key_is_an_error_except_locally() {
        let remote = ModelInfo::new("anthropic", "c", Api::AnthropicMessages, "https://api.anthropic.com");
        let e = Credentials::none().require(&remote).unwrap_err();
        assert_eq!(e.to_string(), "No API key for anthropic");
        let local = ModelInfo::new("llama", "c", Api::OpenAiCompletions, "http://127.0.0.1:8080/v1");
        assert_eq!(Credentials::none().require(&local).unwrap(), None);
        let with = Credentials::none().with_key("anthropic", "k");
        assert_eq!(with.require(&remote).unwrap().as_deref(), Some("k"));
    }
}
