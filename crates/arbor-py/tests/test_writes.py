"""Writing: appends and labels that the `arbor` command (and so pi) reads
back, and the single-writer lock shared with the command, held and refused
across real processes.
"""

import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

import arbor_sessions as arbor
from conftest import FIXTURES, flat_tree


@pytest.fixture
def demo(tmp_path):
    path = tmp_path / "demo.jsonl"
    shutil.copyfile(FIXTURES / "demo" / "demo.jsonl", path)
    return path


def test_appends_and_labels_round_trip_through_the_cli(cli, demo):
    before = demo.read_bytes()
    with arbor.open(demo, "write") as s:
        leaf = s.leaf_id
        q = s.append_message(arbor.user_message("Does it handle Unicode?", timestamp=1767225600000))
        call = {"id": "toolu_9", "name": "bash", "arguments": {"command": "pytest -q"}}
        a = s.append_message(
            arbor.assistant_message(
                "Running the tests.",
                provider="anthropic",
                model="claude-sonnet-4-5",
                api="anthropic-messages",
                tool_calls=[call],
                usage={"input": 120, "output": 30, "cost": {"input": 0.00036, "output": 0.00045}},
                timestamp=1767225601000,
            )
        )
        r = s.append_message(arbor.tool_result("toolu_9", "bash", "12 passed\n", timestamp=1767225602000))
        lab = s.set_label(q, "unicode")
        assert s.leaf_id == lab
        assert [e.id for e in s.path()][-4:] == [q, a, r, lab]
        assert s.entry(q).parent_id == leaf
    # The file only grew: every old byte is where it was.
    assert demo.read_bytes().startswith(before)
    # The CLI reads what the package wrote, the same way the package does.
    path = cli.json("path", demo)
    assert [e["id"] for e in path][-4:] == [q, a, r, lab]
    assert path[-4]["message"] == {
        "role": "user",
        "content": [{"type": "text", "text": "Does it handle Unicode?"}],
        "timestamp": 1767225600000,
    }
    assistant = path[-3]["message"]
    assert assistant["content"][1] == {"type": "toolCall", **call}
    assert assistant["usage"]["totalTokens"] == 150 and assistant["usage"]["cost"]["total"] == pytest.approx(0.00081)
    assert assistant["stopReason"] == "toolUse"
    assert path[-2]["message"]["toolCallId"] == "toolu_9" and path[-2]["message"]["isError"] is False
    with arbor.open(demo) as s:
        assert s.label(q) == "unicode"
        assert flat_tree(s.tree()) == flat_tree(cli.json("tree", demo))
        assert s.llm_messages() == cli.json("context", demo, "--llm")
        assert s.llm_messages()[-1]["role"] == "toolResult"
    # A label the CLI sets, the package reads; clearing it too.
    cli.run("label", demo, q, "edge cases")
    with arbor.open(demo, "write") as s:
        assert s.label(q) == "edge cases"
        s.set_label(q, None)
        assert s.label(q) is None
    assert "label" not in node(cli.json("tree", demo), q)
    with arbor.open(demo) as s:
        assert q not in s.labels()


def node(tree, id):
    """The node of entry `id` in pi's getTree() output."""
    stack = list(tree)
    while stack:
        n = stack.pop()
        if n["entry"]["id"] == id:
            return n
        stack.extend(n["children"])
    raise AssertionError(f"{id} is not in the tree")


def test_a_new_session_reaches_disk_with_its_first_assistant_message(cli, tmp_path):
    path = tmp_path / "new.jsonl"
    with arbor.open(path, "create") as s:
        s.append_message(arbor.user_message("hello", timestamp=1))
        assert not path.exists(), "pi writes a new session with its first assistant message"
        s.append_message(arbor.assistant_message("hi", provider="openai", model="m", timestamp=2))
        assert path.exists()
        sid = s.id
    dump = cli.json("dump", path)
    assert dump["header"]["id"] == sid
    assert [e["message"]["role"] for e in dump["entries"]] == ["user", "assistant"]


def hold_lock_script(path, ready):
    """A second Python process that opens `path` for writing and waits."""
    return textwrap.dedent(
        f"""
        import sys, time
        import arbor_sessions as arbor
        s = arbor.open({str(path)!r}, "write")
        open({str(ready)!r}, "w").close()
        sys.stdin.read()
        s.close()
        """
    )


def test_a_second_writer_is_refused_with_the_holder_s_pid(cli, demo, tmp_path):
    # This process holds the lock: another Python process and the CLI are refused.
    with arbor.open(demo, "write"):
        other = subprocess.run(
            [sys.executable, "-c", f"import arbor_sessions as a\ntry:\n a.open({str(demo)!r}, 'write')\nexcept a.LockedError as e:\n print(e.pid)"],
            capture_output=True,
            text=True,
        )
        assert other.stdout.strip() == str(os.getpid()), other
        done = cli.run("label", demo, "eb499f6b", "x", check=False)
        assert done.returncode != 0 and f"pid {os.getpid()}" in done.stderr, done.stderr
        # Readers are never blocked.
        with arbor.open(demo) as r:
            assert r.leaf_id
    # Another process holds it: this one is refused, naming that process.
    ready = tmp_path / "ready"
    holder = subprocess.Popen([sys.executable, "-c", hold_lock_script(demo, ready)], stdin=subprocess.PIPE, text=True)
    try:
        for _ in range(600):
            if ready.exists() or holder.poll() is not None:
                break
            time.sleep(0.05)
        assert ready.exists(), "the holder did not start"
        with pytest.raises(arbor.LockedError) as e:
            arbor.open(demo, "write")
        assert e.value.pid == holder.pid
        assert e.value.path == str(demo)
        assert f"pid {holder.pid}" in str(e.value) and str(demo) in str(e.value)
        assert isinstance(e.value, arbor.ArborError)
    finally:
        holder.communicate("", timeout=30)
    # Released when the holder closed: writing works again.
    with arbor.open(demo, "write") as s:
        s.set_label(s.leaf_id, "after")


def test_closing_releases_the_lock_and_ends_the_session(demo):
    s = arbor.open(demo, "write")
    assert not s.read_only and "writing" in repr(s)
    s.close()
    assert "closed" in repr(s)
    with pytest.raises(arbor.ArborError, match="closed"):
        s.leaf_id
    s.close()
    with arbor.open(demo, "write") as again:
        assert again.leaf_id
