//! The CLI's `--json` outputs against the reference implementation's outputs
//! (the contracts of docs/cli.md). v1 inputs are migrated with the
//! counter id generator the reference outputs were made with (`ARBOR_IDS=counter`).

use std::fs;

use serde_json::{json, Value};

use crate::{arbor, big_stack, fixtures, json};

use arbor_test_support::oracle::{load, reduce_tree};

fn runs() -> Vec<(String, String, Vec<String>, String)> {
    let m = load("MANIFEST.json");
    let mut out = vec![];
    for (file, info) in m["files"].as_object().unwrap() {
        for r in info["runs"].as_array().unwrap() {
            if !r["error"].is_null() {
                continue;
            }
            let args = r["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect();
            out.push((
                file.clone(),
                r["command"].as_str().unwrap().to_owned(),
                args,
                r["output"].as_str().unwrap().to_owned(),
            ));
        }
    }
    out
}

#[test]
fn dump_tree_path_and_context_agree_with_the_reference() {
    big_stack(|| {
        let mut checked = 0;
        for (file, command, args, output) in runs() {
            let path = fixtures().join("pi").join(&file);
            let p = path.to_str().unwrap();
            let leaf: Vec<&str> = args.first().map(|a| vec!["--leaf", a.as_str()]).unwrap_or_default();
            let got = match command.as_str() {
                "dump" => json(&arbor(&["dump", p, "--json"])),
                "tree" => reduce_tree(&json(&arbor(&["tree", p, "--json"]))),
                "branch" => {
                    let mut a = vec!["path", p];
                    a.extend(args.iter().map(String::as_str));
                    a.push("--json");
                    let ids: Vec<Value> =
                        json(&arbor(&a)).as_array().unwrap().iter().map(|e| e["id"].clone()).collect();
                    Value::Array(ids)
                }
                "context" => json(&arbor(&[&["context", p, "--json"], leaf.as_slice()].concat())),
                "llm" => json(&arbor(&[&["context", p, "--llm", "--json"], leaf.as_slice()].concat())),
                _ => continue,
            };
            assert_eq!(got, load(&output), "{file} {command} {args:?}");
            checked += 1;
        }
        assert!(checked >= 22, "only {checked} reference runs compared");
    });
}

#[test]
fn fork_at_agrees_with_the_reference() {
    big_stack(|| {
        let mut checked = 0;
        for (file, command, args, output) in runs() {
            if command != "branched" {
                continue;
            }
            let dir = tempfile::tempdir().unwrap();
            let src = dir.path().join("src.jsonl");
            fs::copy(fixtures().join("pi").join(&file), &src).unwrap();
            let out = json(&arbor(&[
                "fork",
                src.to_str().unwrap(),
                "--at",
                &args[0],
                "--sessions-dir",
                dir.path().to_str().unwrap(),
                "--json",
            ]));
            let new_path = out["path"].as_str().unwrap();
            let lines: Vec<Value> =
                fs::read_to_string(new_path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            let expected = load(&output);
            let mask = |mut h: Value| {
                for k in ["id", "timestamp", "parentSession"] {
                    h[k] = json!("<masked>");
                }
                h
            };
            assert_eq!(mask(lines[0].clone()), mask(expected["header"].clone()));
            assert_eq!(&lines[1..], expected["entries"].as_array().unwrap().as_slice(), "{file} {args:?}");
            // The source file is never touched by a fork.
            assert_eq!(fs::read(&src).unwrap(), fs::read(fixtures().join("pi").join(&file)).unwrap());
            checked += 1;
        }
        assert_eq!(checked, 4);
    });
}
