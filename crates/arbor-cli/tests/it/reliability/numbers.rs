//! Numbers and clean copies (item 7 of issue #38): a v1 migration writes
//! the values it does not change as they were (`1e400`, a 30-digit integer,
//! `2.50`), as a v2 migration and `repair --write` do; `export --format
//! jsonl --all` of a file `check` calls clean is that file, byte for byte.

use std::fs;
use std::path::Path;

use super::arbor_in;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Values `JSON.stringify` would write otherwise, each as a member's text.
const ODD_VALUES: [&str; 4] =
    [r#""cost":2.50"#, r#""big":123456789012345678901234567890"#, r#""inf":1e400"#, r#""tiny":1E-7"#];

/// A v1 session (no ids) whose header and messages hold [`ODD_VALUES`].
fn v1_session(path: &Path) {
    let odd = ODD_VALUES.join(",");
    let lines = [
        format!(
            r#"{{"type":"session","id":"v1-odd","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p","x":{{{odd}}}}}"#
        ),
        format!(
            r#"{{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"hi","usage":{{{odd}}}}}}}"#
        ),
        format!(
            r#"{{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"ok"}}],"usage":{{{odd}}}}}}}"#
        ),
    ];
    fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// The ids `arbor dump --json` gives the entries of `file`.
fn ids(dir: &Path, file: &str) -> Vec<String> {
    let o = arbor_in(dir, &["dump", "--json", file]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["entries"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn a_v1_migration_keeps_the_values_it_does_not_change_byte_for_byte() {
    for how in ["label", "repair"] {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("s.jsonl");
        v1_session(&file);
        let before = fs::read_to_string(&file).unwrap();
        let id = ids(d.path(), "s.jsonl")[0].clone();
        let o = match how {
            "label" => arbor_in(d.path(), &["label", "s.jsonl", &id, "kept"]),
            _ => {
                // repair migrates only a file it repairs: one blank line to drop.
                fs::write(&file, format!("{before}\n")).unwrap();
                arbor_in(d.path(), &["repair", "s.jsonl", "--write"])
            }
        };
        assert!(o.status.success(), "{how}: {}", stderr(&o));
        let after = fs::read_to_string(&file).unwrap();
        assert!(after.lines().next().unwrap().contains(r#""version":3"#), "{how}: migrated: {after}");
        // Before: `2.5`, `1.2345678901234568e+29`, `null` and `1e-7`.
        for (was, now) in before.lines().zip(after.lines()) {
            for value in ODD_VALUES {
                assert!(now.contains(value), "{how}: {value} was rewritten:\n{was}\n{now}");
            }
        }
        // The migration's own changes: the ids and the chain, in pi's order (after the other keys).
        let (now, second) = (ids(d.path(), "s.jsonl"), after.lines().nth(2).unwrap());
        assert!(second.ends_with(&format!(r#","id":"{}","parentId":"{}"}}"#, now[1], now[0])), "{how}: {second}");
        let check = arbor_in(d.path(), &["check", "s.jsonl"]);
        assert!(check.status.success(), "{how}: {}", String::from_utf8_lossy(&check.stdout));
    }
}

/// True when `arbor check` says exactly that `file` is clean.
fn clean(dir: &Path, file: &Path) -> bool {
    let o = arbor_in(dir, &["check", file.to_str().unwrap()]);
    o.status.success() && String::from_utf8_lossy(&o.stdout).trim_end() == format!("{}: ok", file.display())
}

#[test]
fn exporting_every_entry_of_a_clean_file_gives_the_file_byte_for_byte() {
    let d = tempfile::tempdir().unwrap();
    let odd = d.path().join("odd.jsonl");
    let values = ODD_VALUES.join(",");
    fs::write(
        &odd,
        [
            format!(r#"{{"type":"session","version":3,"id":"v3-odd","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p","x":{{{values}}}}}"#),
            format!(r#"{{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user","content":"hi \ud83d","usage":{{{values}}}}}}}"#),
            format!(r#"{{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z","message":{{"role":"assistant","content":[],"usage":{{{values}}}}}}}"#),
        ]
        .join("\n")
            + "\n",
    )
    .unwrap();
    let mut files = vec![odd];
    for e in fs::read_dir(crate::fixtures().join("logs/ok")).unwrap() {
        files.push(e.unwrap().path());
    }
    let mut copied = 0;
    for file in files.iter().filter(|f| clean(d.path(), f)) {
        let o = arbor_in(d.path(), &["export", file.to_str().unwrap(), "--format", "jsonl", "--all"]);
        assert!(o.status.success(), "{}: {}", file.display(), stderr(&o));
        // Before: the header and the lines only JavaScript reads were written again (`2.5`, `null`).
        assert_eq!(String::from_utf8_lossy(&o.stdout), fs::read_to_string(file).unwrap(), "{}", file.display());
        copied += 1;
    }
    assert!(copied > 10, "only {copied} clean files");
}
