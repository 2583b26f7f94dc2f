"""Reading a session: the package answers what `arbor … --json` prints, on
every session fixture of the repository (pi's real sessions, the
compatibility cases pi-diff found, the hand-made logs, damaged ones).
"""

import json

import pytest

import arbor_sessions as arbor
from conftest import FIXTURES, fixture_id, flat_tree, session_fixtures


def readable(cli, path):
    """True when the CLI opens the file (a file that is not a session is
    checked in test_errors)."""
    return cli.run("path", path, "--json", check=False).returncode == 0


def probes(session):
    """Entries to ask about besides the leaf: the first and last in file
    order, and one in the middle (a compaction or branch summary where the
    file has one, since the context changes there)."""
    ids = [e.id for e in session.entries()]
    if not ids:
        return []
    special = [e.id for e in session.entries() if e.type in ("compaction", "branch_summary")]
    picks = [ids[0], special[-1] if special else ids[len(ids) // 2], ids[-1]]
    return list(dict.fromkeys(picks))


@pytest.mark.parametrize("path", session_fixtures(), ids=fixture_id)
def test_tree_path_and_context_are_the_cli_s(cli, path):
    if not readable(cli, path):
        with pytest.raises(arbor.ArborError):
            arbor.open(path)
        return
    with arbor.open(path) as s:
        assert flat_tree(s.tree()) == flat_tree(cli.json("tree", path))
        assert [e.to_dict() for e in s.path()] == cli.json("path", path)
        assert s.context() == cli.json("context", path)
        assert s.llm_messages() == cli.json("context", path, "--llm")
        for at in probes(s):
            assert [e.to_dict() for e in s.path(at)] == cli.json("path", path, at), at
            assert s.context(at) == cli.json("context", path, "--leaf", at), at
            assert s.llm_messages(at) == cli.json("context", path, "--leaf", at, "--llm"), at
        # Asking about other entries left the leaf where it was.
        assert s.context() == cli.json("context", path)


@pytest.mark.parametrize(
    "name", ["pi/before-compaction.jsonl", "demo/demo.jsonl", "logs/err/duplicate-ids.jsonl", "logs/legacy/v1/simple-chat.jsonl", "logs/ok/labels.jsonl"]
)
def test_entries_are_the_dump_s_and_agree_with_the_tree(cli, name):
    path = FIXTURES / name
    dump = cli.json("dump", path)
    with arbor.open(path) as s:
        entries = s.entries()
        assert [e.to_dict() for e in entries] == dump["entries"]
        assert s.leaf_id == dump["leafId"]
        assert s.header == dump["header"]
        assert len(s) == len(entries)
        # The heads are the tree model's: every node of the tree is an entry
        # whose children are the tree's children.
        by_id = {e.id: e for e in entries}
        stack = list(s.tree())
        while stack:
            node = stack.pop()
            entry = by_id[node["entry"]["id"]]
            assert entry.to_dict() == node["entry"]
            assert entry.type == node["entry"]["type"]
            assert sorted(c.id for c in s.children(entry.id)) == sorted(c["entry"]["id"] for c in node["children"])
            assert s.label(entry.id) == node.get("label")
            stack.extend(node["children"])
        if s.leaf_id is not None:
            assert s.leaf.id == s.leaf_id
            assert s.path()[-1].id == s.leaf_id


def test_an_entry_s_fields_are_the_tree_model_s(cli):
    """A `parentId` that is not a string is no parent (pi's reading), and a
    message's role and body are the stored message's."""
    with arbor.open(FIXTURES / "compat" / "parent-not-a-string.jsonl") as s:
        u2 = s.entry("u2")
        assert u2.to_dict()["parentId"] == 0
        assert u2.parent_id is None
        assert [e.id for e in s.path("u2")] == ["u2"]
        assert (u2.type, u2.role, u2.message["content"]) == ("message", "user", "parent 0")
        assert u2.timestamp == "2026-01-01T00:00:02.000Z"
        assert repr(u2) == "Entry(id='u2', parent_id=None, type='message', timestamp='2026-01-01T00:00:02.000Z')"
    with arbor.open(FIXTURES / "demo" / "demo.jsonl") as s:
        labelled = [e for e in s.entries() if e.type == "label"]
        assert labelled and all(e.message is None and e.role is None for e in labelled)
        assert s.labels() == {t: s.label(t) for t in s.labels()}
        assert s.name == "wordfreq: case, punctuation, --top"
        assert s.cwd == "/home/dev/wordfreq"
        assert s.read_only and s.diagnostics == []


def test_javascript_only_values_come_through_as_the_cli_prints_them(cli):
    """Lone surrogates stay lone surrogates and numbers beyond f64 read as
    JavaScript reads them, exactly as `json.loads` of the CLI's output."""
    for name in ("lone-surrogates.jsonl", "big-numbers.jsonl"):
        path = FIXTURES / "compat" / name
        with arbor.open(path) as s:
            assert [e.to_dict() for e in s.entries()] == cli.json("dump", path)["entries"]
    with arbor.open(FIXTURES / "compat" / "lone-surrogates.jsonl") as s:
        text = json.dumps([e.to_dict() for e in s.entries()])
        assert "\\ud83d" in text or "\\ud800" in text or "\\udc00" in text


def test_damaged_files_are_read_as_pi_reads_them_with_the_cli_s_diagnostics(cli):
    path = FIXTURES / "logs" / "err" / "garbage-line-middle.jsonl"
    stderr = cli.run("path", path).stderr
    with arbor.open(path) as s:
        assert s.diagnostics, "a garbage line is reported"
        for d in s.diagnostics:
            assert d.startswith(f"{path}:"), d
            assert d in stderr, (d, stderr)


def test_a_tree_deeper_than_python_recurses_is_whole(cli, tmp_path):
    """pi's getTree() of a 5,000-entry chain nests 10,000 lists deep, far
    past Python's recursion limit: the package builds it without recursing."""
    path = tmp_path / "deep.jsonl"
    lines = ['{"type":"session","version":3,"id":"deep","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}']
    for k in range(5000):
        parent = f'"e{k - 1}"' if k else "null"
        lines.append(
            f'{{"type":"message","id":"e{k}","parentId":{parent},"timestamp":"2026-01-01T00:00:01.000Z",'
            f'"message":{{"role":"user","content":"m{k}"}}}}'
        )
    path.write_text("\n".join(lines) + "\n")
    with arbor.open(path) as s:
        tree = s.tree()
        node, depth = tree[0], 1
        while node["children"]:
            (node,) = node["children"]
            depth += 1
        assert (depth, node["entry"]["id"]) == (5000, "e4999")
        # The CLI's getTree() JSON is as deep (Python 3.12 and later cannot
        # json.loads it): the chain is the CLI's path, one child each.
        chain = cli.json("path", path)
        expected = [(k - 1 if k else None, ["entry", "children"], e, None, None, int(k < 4999)) for k, e in enumerate(chain)]
        assert flat_tree(tree) == expected
