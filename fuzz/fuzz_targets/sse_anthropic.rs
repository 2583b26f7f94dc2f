//! Arbitrary bytes as a Messages event stream through the Anthropic
//! client's decoder (`AnthropicClient::replay`): see `common/sse.rs`.
#![no_main]

use std::sync::{Arc, OnceLock};

use arbor_agent::model::{AnthropicClient, Api, ClientOptions, ModelInfo};
use arbor_log::FixedClock;
use libfuzzer_sys::fuzz_target;

#[path = "common/sse.rs"]
mod sse;

fn client() -> &'static AnthropicClient {
    static CLIENT: OnceLock<AnthropicClient> = OnceLock::new();
    CLIENT.get_or_init(|| {
        let model = ModelInfo::new("anthropic", "claude-fuzz", Api::AnthropicMessages, "http://127.0.0.1:9");
        let options =
            ClientOptions { clock: Arc::new(FixedClock::new(1_767_225_700_000, 0)), ..ClientOptions::default() };
        AnthropicClient::new(model, None, options).expect("a client without a network")
    })
}

fuzz_target!(|data: &[u8]| sse::check(data, |chunks| client().replay(chunks)));
