//! Arbitrary bytes as a Chat Completions event stream through the OpenAI
//! client's decoder (`OpenAiClient::replay`): see `common/sse.rs`.
#![no_main]

use std::sync::{Arc, OnceLock};

use arbor_agent::model::{Api, ClientOptions, ModelInfo, OpenAiClient};
use arbor_log::FixedClock;
use libfuzzer_sys::fuzz_target;

#[path = "common/sse.rs"]
mod sse;

fn client() -> &'static OpenAiClient {
    static CLIENT: OnceLock<OpenAiClient> = OnceLock::new();
    CLIENT.get_or_init(|| {
        let model = ModelInfo::new("openai-compat", "gpt-fuzz", Api::OpenAiCompletions, "http://127.0.0.1:9/v1");
        let options =
            ClientOptions { clock: Arc::new(FixedClock::new(1_767_225_700_000, 0)), ..ClientOptions::default() };
        OpenAiClient::new(model, None, options).expect("a client without a network")
    })
}

fuzz_target!(|data: &[u8]| sse::check(data, |chunks| client().replay(chunks)));
