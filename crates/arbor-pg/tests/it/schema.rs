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

#[test]
fn a_server_at_migration_4_is_migrated_by_the_next_client_and_its_sessions_searched() {
    let Some(db) = TestDb::new("from_migration_4") else { return };
    let store = PgStore::connect(&db.url).unwrap();
    let mut s = arbor_tree::Session::create("/p", crate::pg_opts(&store)).unwrap();
    s.append_message(crate::user("the zeppelin lands at noon")).unwrap();
    s.append_message(crate::assistant("noted")).unwrap();
    drop(s);
    // Back to the schema of migration 4: no filters, and the search table every write filled.
    db.client()
        .batch_execute(
            "DROP TABLE arbor.filters; DELETE FROM arbor.migrations WHERE version >= 5; \
             CREATE TABLE arbor.search (session bigint NOT NULL REFERENCES arbor.sessions (id) ON DELETE CASCADE, \
                                        seq bigint NOT NULL, body text NOT NULL, PRIMARY KEY (session, seq))",
        )
        .unwrap();
    drop(store);
    // A role that may only read cannot migrate it: one line says so, and who can.
    let role = format!("reader_m4_{}", std::process::id());
    db.client()
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN; GRANT USAGE ON SCHEMA arbor TO {role}; \
             GRANT SELECT ON ALL TABLES IN SCHEMA arbor TO {role}"
        ))
        .unwrap();
    let reader = db.url.replacen("://arbor@", &format!("://{role}@"), 1);
    let e = PgStore::connect(&reader).unwrap_err().to_string();
    assert!(
        e.contains(&format!("is at version 4 and this arbor needs version {}", arbor_pg::latest_schema()))
            && e.contains("its owner")
            && !e.contains('\n'),
        "{e}"
    );
    let store = PgStore::connect(&db.url).unwrap();
    let mut c = db.client();
    let gone: bool = c.query_one("SELECT to_regclass('arbor.search') IS NULL", &[]).unwrap().get(0);
    let v: i32 = c.query_one("SELECT max(version) FROM arbor.migrations", &[]).unwrap().get(0);
    assert!(gone && v == arbor_pg::latest_schema(), "{v}");
    // Its sessions have no filters yet: read as they are, and given one by that read.
    let request = arbor_tree::sessions::SearchRequest::new("zeppelin", arbor_tree::sessions::Scope::All);
    let hits = arbor_tree::sessions::Sessions::search(&store, &request, &arbor_tree::sessions::NoProgress).unwrap();
    assert_eq!(hits.len(), 1);
    let n: i64 = c.query_one("SELECT count(*) FROM arbor.filters", &[]).unwrap().get(0);
    assert_eq!(n, 1);
}

#[test]
fn lines_are_compressed_with_lz4_where_the_server_has_it() {
    let Some(db) = TestDb::new("lines_lz4") else { return };
    let store = PgStore::connect(&db.url).unwrap();
    let mut s = arbor_tree::Session::create("/p", crate::pg_opts(&store)).unwrap();
    // A line long enough to be compressed (TOAST compresses rows over about 2 KB).
    s.append_message(crate::user(&"the zeppelin lands at noon; ".repeat(400))).unwrap();
    s.append_message(crate::assistant("noted")).unwrap();
    drop(s);
    let mut c = db.client();
    // Whether this server has lz4 (PostgreSQL 14 or later, built with it).
    let lz4 = c.batch_execute("SET default_toast_compression = lz4").is_ok();
    let set: String =
        c.query_one(
            "SELECT attcompression::text FROM pg_attribute WHERE attrelid = 'arbor.lines'::regclass AND attname = 'bytes'",
            &[],
        )
        .unwrap()
        .get(0);
    let used: Vec<String> = c
        .query("SELECT DISTINCT pg_column_compression(bytes) FROM arbor.lines WHERE pg_column_compression(bytes) IS NOT NULL", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    if lz4 {
        assert_eq!((set.as_str(), used), ("l", vec!["lz4".to_owned()]));
    } else {
        // A server without it keeps pglz; the migration is recorded all the same.
        assert_eq!(used, ["pglz"]);
    }
}
