//! Arbitrary logs through the migrations: no panic, and migrating twice
//! changes nothing the second time.
#![no_main]

use arbor_log::ids::CounterIds;
use arbor_log::{LastLine, SessionLog};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut log = SessionLog::read(data).expect("reading from memory cannot fail");
    log.migrate(&mut CounterIds::new());
    let once = log.to_bytes(LastLine::Terminated);
    let mut again = SessionLog::read(&once[..]).expect("reading from memory cannot fail");
    let second = again.migrate(&mut CounterIds::new());
    assert!(!second.migrated() || !log.has_header(), "migrations are idempotent");
    let _ = again.entries_with_diagnostics();
});
