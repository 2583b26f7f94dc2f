//! Arbitrary bytes through the line reader and the two-stage entry decoder:
//! no panic, and reading then writing an unchanged log gives the same bytes.
#![no_main]

use arbor_log::reader::{parse_line, Parsed};
use arbor_log::{Entry, SessionLog};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for line in data.split_inclusive(|&b| b == b'\n') {
        if let (Parsed::Object(v), _) = parse_line(line) {
            if let Ok(e) = Entry::from_value(&v) {
                let again = Entry::from_value(&e.to_value());
                assert!(again.is_ok(), "an encoded entry decodes again");
            }
        }
    }
    let log = SessionLog::read(data).expect("reading from memory cannot fail");
    assert_eq!(log.to_bytes(false), data, "lossless round trip");
    let _ = log.header();
    let _ = log.entries_with_diagnostics();
});
