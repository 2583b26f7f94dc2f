//! The schema's migrations: each once, in order, also when many processes
//! meet a new server at the same time; a newer schema is refused.

use arbor_pg::{PgError, PgStore, MIGRATIONS};
use arbor_test_support::pg::TestDb;

#[test]
fn concurrent_first_use_applies_each_migration_once() {
    let Some(db) = TestDb::new("concurrent_first_use") else { return };
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let url = db.url.clone();
            std::thread::spawn(move || PgStore::connect(&url).map(drop))
        })
        .collect();
    for t in threads {
        t.join().unwrap().unwrap();
    }
    let rows = db.client().query("SELECT version, name FROM arbor.migrations ORDER BY version", &[]).unwrap();
    let applied: Vec<(i32, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let known: Vec<(i32, String)> = MIGRATIONS.iter().map(|m| (m.version, m.name.to_owned())).collect();
    assert_eq!(applied, known);
    // Connecting again changes nothing.
    PgStore::connect(&db.url).unwrap();
    let n: i64 = db.client().query_one("SELECT count(*) FROM arbor.migrations", &[]).unwrap().get(0);
    assert_eq!(n as usize, MIGRATIONS.len());
}

#[test]
fn a_schema_newer_than_this_build_is_refused() {
    let Some(db) = TestDb::new("newer_schema") else { return };
    PgStore::connect(&db.url).unwrap();
    let next = arbor_pg::latest_schema() + 1;
    db.client()
        .execute("INSERT INTO arbor.migrations (version, name) VALUES ($1, 'from the future')", &[&next])
        .unwrap();
    let e = PgStore::connect(&db.url).unwrap_err();
    assert!(matches!(e, PgError::NewerSchema { .. }), "{e}");
    assert!(e.to_string().contains("upgrade arbor"), "{e}");
}
