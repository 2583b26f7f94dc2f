//! The cache: a repeated scan reads only the files that changed, and gives
//! what a fresh scan gives.

use arbor_usage::{pi_files, scan, Agent, Cache, ScanOptions, Source};

use crate::{reply, user, write_session};

#[test]
fn a_repeated_scan_reads_only_what_changed() {
    repeated_scan(ScanOptions::default());
}

#[test]
fn a_repeated_scan_of_local_files_stamped_with_one_stat_reads_only_what_changed() {
    repeated_scan(ScanOptions { local: true, ..ScanOptions::default() });
}

fn repeated_scan(opts: ScanOptions) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    let folder = root.join("--work-app--");
    let mut files = Vec::new();
    for k in 0..3 {
        let id = format!("s{k}");
        files.push(write_session(
            &folder,
            &id,
            None,
            &[("u1", None, user()), ("a1", Some("u1"), reply("gpt-5", 100 + k, Some(1.0)))],
        ));
    }
    let sources: Vec<Source> =
        pi_files(&root, None).unwrap().into_iter().map(|path| Source { agent: Agent::Pi, path }).collect();
    assert_eq!(sources.len(), 3);
    let cache_file = dir.path().join("cache/usage.bin");

    let mut cache = Cache::open(&cache_file);
    let first = scan(&sources, &opts, &mut cache);
    assert_eq!((first.read, first.reused), (3, 0));
    cache.save().unwrap();
    assert!(cache_file.exists());

    let mut cache = Cache::open(&cache_file);
    let again = scan(&sources, &opts, &mut cache);
    assert_eq!((again.read, again.reused), (0, 3), "nothing changed: nothing read");
    assert_eq!(again.sessions, first.sessions);

    // One session grows: only it is read again.
    let mut text = std::fs::read_to_string(&files[1]).unwrap();
    text.push_str(&format!(
        "{}\n",
        serde_json::json!({"type": "message", "id": "a2", "parentId": "a1", "timestamp": "2026-03-02T10:00:00.000Z",
            "message": reply("gpt-5", 7, Some(2.0))["message"]})
    ));
    std::fs::write(&files[1], text).unwrap();
    cache.save().unwrap();
    let mut cache = Cache::open(&cache_file);
    let third = scan(&sources, &opts, &mut cache);
    assert_eq!((third.read, third.reused), (1, 2));
    let fresh = scan(&sources, &opts, &mut Cache::in_memory());
    assert_eq!(third.sessions, fresh.sessions, "what the cache gives is what the files give");
    assert_eq!(fresh.sessions[1].replies.len(), 2);
    // Written again with the unchanged files' sessions too (they were lent
    // to the scan, not copied): a fourth scan reads nothing and loses nothing.
    cache.save().unwrap();
    let mut cache = Cache::open(&cache_file);
    let fourth = scan(&sources, &opts, &mut cache);
    assert_eq!((fourth.read, fourth.reused), (0, 3));
    assert_eq!(fourth.sessions, fresh.sessions);
    // Nothing changed: the file is not written (the lent sessions are not needed back).
    let before = std::fs::metadata(&cache_file).unwrap().modified().unwrap();
    cache.save().unwrap();
    assert_eq!(std::fs::metadata(&cache_file).unwrap().modified().unwrap(), before);
}

#[test]
fn another_file_put_in_a_files_place_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let body = |input| [("u1", None, user()), ("a1", Some("u1"), reply("gpt-5", input, Some(1.0)))];
    let file = write_session(dir.path(), "s", None, &body(100));
    let opts = ScanOptions { local: true, ..ScanOptions::default() };
    let src = [Source { agent: Agent::Pi, path: file.clone() }];
    let mut cache = Cache::in_memory();
    assert_eq!(scan(&src, &opts, &mut cache).read, 1);
    // The same size and modification time, but another file renamed over it.
    let meta = std::fs::metadata(&file).unwrap();
    let other = write_session(&dir.path().join("other"), "s", None, &body(200));
    std::fs::File::options().write(true).open(&other).unwrap().set_modified(meta.modified().unwrap()).unwrap();
    assert_eq!(std::fs::metadata(&other).unwrap().len(), meta.len());
    std::fs::rename(&other, &file).unwrap();
    let again = scan(&src, &opts, &mut cache);
    assert_eq!((again.read, again.reused), (1, 0));
    assert_eq!(again.sessions[0].replies[0].tokens.input, 200);
}

#[cfg(unix)]
#[test]
fn links_to_session_files_and_folders_are_found_links_elsewhere_are_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    let elsewhere = dir.path().join("elsewhere");
    let body = [("u1", None, user()), ("a1", Some("u1"), reply("gpt-5", 1, None))];
    let real = write_session(&root.join("--work-app--"), "s1", None, &body);
    let linked_file = write_session(&elsewhere.join("files"), "s2", None, &body);
    write_session(&elsewhere.join("--work-lib--"), "s3", None, &body);
    std::os::unix::fs::symlink(&linked_file, root.join("--work-app--").join("s2.jsonl")).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("--work-lib--"), root.join("--work-lib--")).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("files"), root.join("--work-app--").join("folder.jsonl")).unwrap();
    let found: Vec<String> = pi_files(&root, None)
        .unwrap()
        .iter()
        .map(|p| p.strip_prefix(&root).unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        found,
        [
            real.strip_prefix(&root).unwrap().to_string_lossy().into_owned(),
            "--work-app--/s2.jsonl".to_owned(),
            "--work-lib--/2026-03-01T10-00-00-000Z_s3.jsonl".to_owned()
        ]
    );
    // Another agent's folders: a link is not followed at all.
    let under = arbor_usage::files_under(&root, ".jsonl").unwrap();
    assert_eq!(under, [real]);
}

#[test]
fn a_file_given_twice_is_still_cached_whole() {
    let dir = tempfile::tempdir().unwrap();
    let one =
        write_session(dir.path(), "one", None, &[("u1", None, user()), ("a1", Some("u1"), reply("gpt-5", 1, None))]);
    let two =
        write_session(dir.path(), "two", None, &[("u1", None, user()), ("a1", Some("u1"), reply("gpt-5", 2, None))]);
    let cache_file = dir.path().join("cache/usage.bin");
    let src = |p: &std::path::Path| Source { agent: Agent::Pi, path: p.to_owned() };
    let mut cache = Cache::open(&cache_file);
    scan(&[src(&one)], &ScanOptions::default(), &mut cache);
    cache.save().unwrap();
    // `one` twice (from the cache), and `two` new: the cache is written again.
    let mut cache = Cache::open(&cache_file);
    let s = scan(&[src(&one), src(&one), src(&two)], &ScanOptions::default(), &mut cache);
    assert_eq!((s.read, s.reused), (1, 2));
    cache.save().unwrap();
    let mut cache = Cache::open(&cache_file);
    let again = scan(&[src(&one), src(&two)], &ScanOptions::default(), &mut cache);
    assert_eq!((again.read, again.reused), (0, 2));
    assert_eq!(again.sessions.iter().map(|s| s.replies.len()).collect::<Vec<_>>(), vec![1, 1], "nothing lost");
}

#[test]
fn a_file_that_cannot_be_read_is_named_and_the_others_are_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let good =
        write_session(dir.path(), "ok", None, &[("u1", None, user()), ("a1", Some("u1"), reply("gpt-5", 1, None))]);
    let bad = dir.path().join("2026-03-01T10-00-00-000Z_bad.jsonl");
    std::fs::write(&bad, "not a session\n").unwrap();
    let sources = [Source { agent: Agent::Pi, path: bad.clone() }, Source { agent: Agent::Pi, path: good }];
    let s = scan(&sources, &ScanOptions::default(), &mut Cache::in_memory());
    assert_eq!(s.sessions.len(), 1);
    assert_eq!(s.unreadable.len(), 1);
    assert!(s.unreadable[0].contains(bad.to_str().unwrap()), "{:?}", s.unreadable);
}
