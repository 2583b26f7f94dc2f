//! Arbitrary bytes through the line reader and the two-stage entry decoder:
//! no panic, and reading then writing an unchanged log gives the same bytes.
//! Every line also goes through the light scan (`scan_line`, with its fast
//! validator), which must accept exactly the lines `parse_line_detail`
//! accepts, with the head read from the parsed value, and give the same
//! diagnostic otherwise.
#![no_main]

use arbor_log::reader::{parse_line, parse_line_detail, Parsed};
use arbor_log::scan::{scan_line, RecordHead, ScanKind};
use arbor_log::{Entry, SessionLog};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for line in data.split_inclusive(|&b| b == b'\n') {
        let (light, light_note) = scan_line(line, false);
        let (full, full_note, js_only) = parse_line_detail(line);
        assert_eq!(light_note, full_note, "the light scan's note");
        match (light, full) {
            (ScanKind::Blank, Parsed::Blank) => {}
            (ScanKind::Skipped(a), Parsed::Skipped(b)) => assert_eq!(a, b, "the light scan's diagnostic"),
            (ScanKind::Object(h), Parsed::Object(v)) => {
                assert_eq!(h, RecordHead { js_only, ..RecordHead::from_value(&v) }, "the light scan's head")
            }
            (a, b) => panic!("the light scan read {a:?}, the reader {b:?}"),
        }
        if let (Parsed::Object(v), _) = parse_line(line) {
            if let Ok(e) = Entry::from_value(&v) {
                let again = Entry::from_value(&e.to_value());
                assert!(again.is_ok(), "an encoded entry decodes again");
            }
        }
    }
    let log = SessionLog::read(data).expect("reading from memory cannot fail");
    assert_eq!(log.to_bytes(arbor_log::LastLine::AsRead), data, "lossless round trip");
    let _ = log.header();
    let _ = log.entries_with_diagnostics();
});
