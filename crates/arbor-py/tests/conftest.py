"""What the tests share: the `arbor` binary they compare the package with, the
repository's fixtures, and a sessions root laid out as pi lays it out.

The binary is `$ARBOR_BIN` (`cargo xtask py test` sets it), else the
workspace's dev build; its index cache and catalog go to a temporary folder,
never to the user's cache.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "fixtures"


def session_fixtures():
    """Every pi session file of the fixtures, and the damaged ones (not the
    other agents' transcripts under import/)."""
    files = sorted(p for p in FIXTURES.rglob("*.jsonl") if "import" not in p.relative_to(FIXTURES).parts)
    assert len(files) > 40, f"fixtures not found under {FIXTURES}"
    return files


def fixture_id(path):
    return str(path.relative_to(FIXTURES))


@pytest.fixture(scope="session")
def arbor_bin():
    given = os.environ.get("ARBOR_BIN")
    path = Path(given) if given else REPO / "target" / "debug" / "arbor"
    if not path.is_file():
        pytest.fail(f"no arbor binary at {path}: build it (cargo build -p arbor-cli) or set ARBOR_BIN")
    return path


@pytest.fixture(scope="session")
def cli_env(tmp_path_factory):
    """The CLI's environment: its cache in a temporary folder."""
    env = dict(os.environ)
    env["ARBOR_CACHE_DIR"] = str(tmp_path_factory.mktemp("arbor-cache"))
    for var in ("ARBOR_STORE", "ARBOR_SESSIONS_DIR", "ARBOR_IDS"):
        env.pop(var, None)
    return env


class Cli:
    """Runs the `arbor` binary."""

    def __init__(self, binary, env):
        self.binary = binary
        self.env = env

    def run(self, *args, check=True):
        done = subprocess.run(
            [str(self.binary), *map(str, args)],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=REPO,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"arbor {' '.join(map(str, args))} failed ({done.returncode}): {done.stderr}")
        return done

    def json(self, *args):
        """The command's `--json` output, parsed as the package parses it."""
        return deep_loads(self.run(*args, "--json").stdout)


def deep_loads(text):
    """`json.loads`, with room for pi's getTree() of a long session (its
    lists nest as deep as the longest path: two levels an entry)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 100_000))
    try:
        return json.loads(text)
    finally:
        sys.setrecursionlimit(old)


def flat_tree(tree):
    """A getTree() as a list, depth first and without recursion: each node's
    parent index, its keys in order, entry, label, labelTimestamp and number
    of children (two trees are equal when their lists are; `==` on the
    nested lists would recurse as deep as the tree)."""
    out = []
    stack = [(n, None) for n in reversed(tree)]
    while stack:
        node, parent = stack.pop()
        k = len(out)
        children = node["children"]
        out.append((parent, list(node), node["entry"], node.get("label"), node.get("labelTimestamp"), len(children)))
        stack.extend((c, k) for c in reversed(children))
    return out


@pytest.fixture(scope="session")
def cli(arbor_bin, cli_env):
    return Cli(arbor_bin, cli_env)


@pytest.fixture(scope="session")
def sessions_root(tmp_path_factory):
    """A sessions root in pi's layout holding copies of the demo, the
    compatibility fixtures and the sound hand-made logs, two working
    directories' worth (read-only: tests that write make their own)."""
    root = tmp_path_factory.mktemp("sessions")
    groups = {
        "--home-dev-wordfreq--": [FIXTURES / "demo" / "demo.jsonl"],
        "--work-compat--": sorted((FIXTURES / "compat").glob("*.jsonl")),
        "--work-logs--": sorted((FIXTURES / "logs" / "ok").glob("*.jsonl")),
    }
    for folder, files in groups.items():
        (root / folder).mkdir()
        for f in files:
            shutil.copyfile(f, root / folder / f.name)
    return root
