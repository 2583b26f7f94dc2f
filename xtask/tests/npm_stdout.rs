//! `cargo xtask pi` prints only the install folder on stdout, also on the
//! run that installs: tests read that line (issue 39: npm's "added N
//! packages" used to come first on a fresh machine).

#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// An executable shell script at `path`.
fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn pi_prints_only_its_folder_on_the_run_that_installs() {
    let tmp = std::env::temp_dir().join(format!("xtask-npm-stdout-{}", std::process::id()));
    let bin = tmp.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    // An npm that talks on stdout as the real one does, and "installs" the
    // package's manifest under --prefix.
    script(
        &bin.join("npm"),
        r#"if [ "$1" = "--version" ]; then echo 11.0.0; exit 0; fi
prefix=""; prev=""
for a in "$@"; do if [ "$prev" = "--prefix" ]; then prefix="$a"; fi; prev="$a"; done
echo "added 263 packages in 4s"
mkdir -p "$prefix/node_modules/@mariozechner/pi-coding-agent"
echo '{"version":"0.73.1"}' > "$prefix/node_modules/@mariozechner/pi-coding-agent/package.json""#,
    );
    script(&bin.join("node"), "echo v20.0.0");
    let dir = tmp.join("pi");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    for run in ["installs", "finds"] {
        let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .arg("pi")
            .env("PATH", &path)
            .env("ARBOR_PI_DIR", &dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{run}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("{}\n", dir.display()), "the run that {run}");
        if run == "installs" {
            assert!(String::from_utf8_lossy(&out.stderr).contains("added 263 packages"), "npm's words go to stderr");
        }
    }
    std::fs::remove_dir_all(&tmp).unwrap();
}
