"""Failures are exceptions of one hierarchy, with the CLI's one-line
messages naming the file, entry or name at fault; bad arguments are
Python's own ValueError and TypeError; nothing is written by a failure.
"""

import math
import shutil

import pytest

import arbor_sessions as arbor
from conftest import FIXTURES


def cli_error(cli, *args):
    done = cli.run(*args, check=False)
    assert done.returncode != 0, args
    return done.stderr.strip().removeprefix("arbor: ")


def test_the_hierarchy():
    for cls in (
        arbor.LockedError,
        arbor.NotFoundError,
        arbor.AmbiguousError,
        arbor.ReadOnlyError,
        arbor.NotASessionError,
        arbor.QueryError,
    ):
        assert issubclass(cls, arbor.ArborError), cls
        assert cls.__module__ == "arbor_sessions" and cls.__doc__, cls
    assert issubclass(arbor.ArborError, Exception)


def test_missing_files_and_non_sessions_are_refused_as_the_cli_refuses_them(cli, tmp_path):
    missing = tmp_path / "missing.jsonl"
    for mode in ("read", "write"):
        with pytest.raises(arbor.NotFoundError) as e:
            arbor.open(missing, mode)
        assert str(e.value) == cli_error(cli, "path", missing)
    assert not missing.exists() and list(tmp_path.iterdir()) == [], "a failed open writes nothing"
    for name in ("headerless.jsonl", "empty.jsonl", "header-not-first.jsonl"):
        path = FIXTURES / "logs" / "err" / name
        before = path.read_bytes()
        for mode in ("read", "write", "create"):
            with pytest.raises(arbor.NotASessionError) as e:
                arbor.open(path, mode)
            assert str(e.value) == cli_error(cli, "path", path), (name, mode)
        assert path.read_bytes() == before


def test_unknown_entries_name_the_file_and_the_id(cli):
    path = FIXTURES / "demo" / "demo.jsonl"
    expected = cli_error(cli, "path", path, "nope")
    assert expected == f"{path}: Entry nope not found"
    with arbor.open(path) as s:
        for call in (
            lambda: s.entry("nope"),
            lambda: s.path("nope"),
            lambda: s.children("nope"),
            lambda: s.context("nope"),
            lambda: s.llm_messages("nope"),
        ):
            with pytest.raises(arbor.NotFoundError) as e:
                call()
            assert str(e.value) == expected
        assert "nope" not in s and s.label("nope") is None


def test_writes_to_a_read_only_session_are_refused(tmp_path):
    path = tmp_path / "demo.jsonl"
    shutil.copyfile(FIXTURES / "demo" / "demo.jsonl", path)
    before = path.read_bytes()
    with arbor.open(path) as s:
        with pytest.raises(arbor.ReadOnlyError, match="read-only"):
            s.append_message(arbor.user_message("x"))
        with pytest.raises(arbor.ReadOnlyError):
            s.set_label(s.leaf_id, "x")
    with arbor.open(path, "write") as s:
        with pytest.raises(arbor.NotFoundError):
            s.set_label("nope", "x")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.jsonl"], "the lock is gone, nothing else left"


def test_bad_arguments_are_value_and_type_errors(tmp_path):
    path = tmp_path / "demo.jsonl"
    shutil.copyfile(FIXTURES / "demo" / "demo.jsonl", path)
    with pytest.raises(ValueError, match="open mode"):
        arbor.open(path, "rw")
    before = path.read_bytes()
    with arbor.open(path, "write") as s:
        with pytest.raises(TypeError):
            s.append_message(["not", "a", "dict"])
        with pytest.raises(ValueError, match="role"):
            s.append_message({"content": "no role"})
        with pytest.raises(ValueError):
            s.append_message({"role": "user", "content": "x", "timestamp": math.nan})
        with pytest.raises(TypeError):
            s.append_message({"role": "user", "content": object()})
    assert path.read_bytes() == before
    with pytest.raises(ValueError, match="usage.input must be a number"):
        arbor.assistant_message("x", provider="p", model="m", usage={"input": "ten"})
    with pytest.raises(ValueError, match=r"tool_calls\[0\] needs a string \"id\""):
        arbor.assistant_message("x", provider="p", model="m", tool_calls=[{"name": "bash"}])
    with pytest.raises(TypeError):
        arbor.assistant_message("x", model="m")
