//! README's promise to a newcomer: its "Set up" section holds exactly two
//! commands, one that runs the main job on the bundled demo and one that runs
//! the tests, each alone in a ```` ```sh ```` block. `.ci/run` runs them as
//! written there (on a fresh HOME), so they must stay where it finds them.

use std::path::Path;

use anyhow::{Context, Result};

/// The command that runs every test: what `.ci/run` expects the second one to be.
pub const TEST_COMMAND: &str = "cargo nextest run --workspace";

/// The problems of README.md at `root`.
pub fn check(root: &Path) -> Result<Vec<String>> {
    let path = root.join("README.md");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(problems(&text))
}

/// The commands of the "## Set up" section, one per ```sh block (its lines).
pub fn setup_blocks(readme: &str) -> Vec<Vec<String>> {
    let mut blocks = vec![];
    let mut in_setup = false;
    let mut block: Option<Vec<String>> = None;
    for line in readme.lines() {
        if let Some(b) = block.as_mut() {
            if line.trim_start().starts_with("```") {
                blocks.extend(block.take());
            } else if !line.trim().is_empty() {
                b.push(line.to_owned());
            }
            continue;
        }
        if line.starts_with("## ") {
            in_setup = line == "## Set up";
        } else if in_setup && line == "```sh" {
            block = Some(vec![]);
        }
    }
    blocks
}

/// What is wrong with `readme`'s set-up section, if anything.
pub fn problems(readme: &str) -> Vec<String> {
    let blocks = setup_blocks(readme);
    let mut problems = vec![];
    if blocks.len() != 2 {
        problems.push(format!(
            "README.md: the \"## Set up\" section must hold exactly two ```sh blocks (the demo, the tests); it holds {}",
            blocks.len()
        ));
    }
    for (i, b) in blocks.iter().enumerate() {
        if b.len() != 1 {
            problems.push(format!("README.md: set-up block {} must hold one command line, not {}", i + 1, b.len()));
        }
    }
    if let Some(test) = blocks.get(1).and_then(|b| b.first()) {
        if test.trim() != TEST_COMMAND {
            problems.push(format!("README.md: the second set-up command must be `{TEST_COMMAND}`, not `{test}`"));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "# A\n\n## Set up\n\nDemo:\n\n```sh\ncargo run -p x -- tree d.jsonl\n```\n\nTests:\n\n```sh\ncargo nextest run --workspace\n```\n\n## Later\n\n```sh\nother\n```\n";

    #[test]
    fn two_commands_pass() {
        assert_eq!(problems(GOOD), Vec::<String>::new());
        assert_eq!(setup_blocks(GOOD)[0], ["cargo run -p x -- tree d.jsonl"]);
    }

    #[test]
    fn a_third_block_or_a_second_line_or_another_test_command_fails() {
        let third = GOOD.replace("## Later", "```sh\nmore\n```\n\n## Later");
        assert_eq!(problems(&third).len(), 1, "{:?}", problems(&third));
        let two_lines = GOOD.replace("d.jsonl\n", "d.jsonl\necho more\n");
        assert_eq!(problems(&two_lines).len(), 1);
        let other = GOOD.replace("cargo nextest run --workspace", "cargo test");
        assert_eq!(problems(&other).len(), 1);
        assert_eq!(problems("# Nothing\n").len(), 1);
    }

    #[test]
    fn the_readme_passes() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        assert_eq!(check(&root).unwrap_or_else(|e| vec![e.to_string()]), Vec::<String>::new());
    }
}
