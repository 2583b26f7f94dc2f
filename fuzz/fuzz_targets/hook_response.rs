//! The hook protocol from the command's side: arbitrary bytes as a command
//! hook's stdout (the first byte picks the event) through
//! `HookResponse::from_stdout`, and as a hooks file (JSON or TOML) through
//! `HookConfig`: no panic, and an answer only for the event asked (never for
//! a notification).
#![no_main]

use arbor_agent::hooks::{EventName, HookConfig, HookResponse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let events = EventName::ALL;
    match usize::from(pick) % (events.len() + 2) {
        k if k < events.len() => {
            let event = events[k];
            match HookResponse::from_stdout(event, rest) {
                Ok(Some(answer)) => {
                    assert_eq!(answer.event(), event, "an answer is for the event asked");
                    assert!(!event.is_notification(), "a notification takes no answer");
                }
                Ok(None) => {}
                Err(message) => assert!(!message.is_empty()),
            }
        }
        k => {
            let Ok(text) = std::str::from_utf8(rest) else { return };
            let config = if k == events.len() { HookConfig::from_json(text) } else { HookConfig::from_toml(text) };
            if let Ok(config) = config {
                if let Ok(hooks) = config.command_hooks() {
                    assert_eq!(hooks.len(), config.hooks.len());
                }
            }
        }
    }
});
