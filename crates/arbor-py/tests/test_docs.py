"""The Python programs of the docs run as written (only the paths are
swapped for copies of the fixtures): the tour of crates/arbor-py/README.md
and the Python section of docs/library.md."""

import os
import re
import shutil

import pytest

from conftest import FIXTURES, REPO


def python_blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


@pytest.fixture
def home_root(tmp_path):
    """A sessions root holding a copy of the demo (the programs write)."""
    root = tmp_path / "sessions"
    (root / "--home-dev-wordfreq--").mkdir(parents=True)
    shutil.copyfile(FIXTURES / "demo" / "demo.jsonl", root / "--home-dev-wordfreq--" / "demo.jsonl")
    return root


def run(code, where):
    cwd = os.getcwd()
    os.chdir(where)
    try:
        exec(compile(code, "<doc>", "exec"), {"__name__": "__doc__"})
    finally:
        os.chdir(cwd)


def test_the_readme_tour_runs(home_root, capsys):
    (code,) = python_blocks(REPO / "crates" / "arbor-py" / "README.md")
    assert 'Path.home() / ".pi/agent/sessions"' in code
    code = code.replace('Path.home() / ".pi/agent/sessions"', repr(str(home_root)))
    run(code, REPO)
    assert "fe01ce2a-7fba-48fa-baed-7c982a04e229" in capsys.readouterr().out
    import arbor_sessions as arbor

    with arbor.Sessions(home_root).open("fe01ce2a") as s:
        assert [e.type for e in s.path()[-3:]] == ["message", "message", "label"]
        assert s.path()[-2].role == "assistant" and "build" in s.labels().values()


def test_the_library_doc_s_python_section_runs(home_root, tmp_path, capsys):
    (code,) = python_blocks(REPO / "docs" / "library.md")
    session = tmp_path / "session.jsonl"
    shutil.copyfile(FIXTURES / "demo" / "demo.jsonl", session)
    for doc, here in [
        ("/home/me/.pi/agent/sessions", str(home_root)),
        ("/home/me/proj", "/home/dev/wordfreq"),
    ]:
        assert doc in code
        code = code.replace(doc, here)
    run(code, tmp_path)
    assert "'role':" in capsys.readouterr().out
    import arbor_sessions as arbor

    with arbor.open(session) as s:
        assert "ownership" in s.labels().values()
