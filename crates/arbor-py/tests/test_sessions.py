"""Every session under a sessions root: listing, search and names answer
what `arbor ls --json`, `arbor search --json` and the CLI's session
arguments give, through the same `FileSessions`.
"""

import os

import pytest

import arbor_sessions as arbor
from conftest import flat_tree


def test_the_listing_is_arbor_ls(cli, sessions_root):
    sessions = arbor.Sessions(sessions_root)
    everything = sessions.listing()
    assert everything == cli.json("ls", "--all", "--sessions-dir", sessions_root)
    assert len(everything) > 20
    for cwd in ("/home/dev/wordfreq", "/work/compat", "/nowhere"):
        assert sessions.listing(cwd) == cli.json("ls", "--cwd", cwd, "--sessions-dir", sessions_root), cwd
    assert sessions.listing("/nowhere") == []


@pytest.mark.parametrize(
    "query, cwd, limit",
    [
        ("the", None, 20),
        ("the", None, 3),
        ("word", "/home/dev/wordfreq", 50),
        ('"count words"', None, 20),
        ("re:[Pp]unct", None, 20),
        ("zzzznothing", None, 20),
    ],
)
def test_search_is_arbor_search(cli, sessions_root, query, cwd, limit):
    sessions = arbor.Sessions(sessions_root)
    where = ["--cwd", cwd] if cwd else ["--all"]
    expected = cli.json("search", query, *where, "--limit", limit, "--sessions-dir", sessions_root)
    assert sessions.search(query, cwd=cwd, limit=limit) == expected
    if query == "the":
        assert len(expected) == limit


def test_a_catalog_kept_in_a_cache_folder_answers_the_same(cli, sessions_root, tmp_path):
    cache = tmp_path / "cache"
    first = arbor.Sessions(sessions_root, cache_dir=cache).search("the", limit=10)
    assert any(cache.rglob("*.sqlite")), "the catalog is kept where it was told"
    again = arbor.Sessions(sessions_root, cache_dir=cache)
    assert again.search("the", limit=10) == first
    assert again.listing() == cli.json("ls", "--all", "--sessions-dir", sessions_root)
    # Nothing was written beside the sessions.
    assert sorted(p.name for p in sessions_root.rglob("*") if not p.name.endswith(".jsonl") and p.is_file()) == []


def test_names_resolve_as_the_cli_resolves_them(cli, sessions_root):
    sessions = arbor.Sessions(sessions_root)
    demo = sessions_root / "--home-dev-wordfreq--" / "demo.jsonl"
    for name in ("fe01ce2a", "fe01ce2a-7fba-48fa-baed-7c982a04e229", "demo.jsonl", "--home-dev-wordfreq--/demo.jsonl"):
        assert sessions.resolve(name) == str(demo), name
    with sessions.open("fe01") as s:
        assert s.file == str(demo)
        assert flat_tree(s.tree()) == flat_tree(cli.json("tree", demo))
    with pytest.raises(arbor.NotFoundError) as e:
        sessions.resolve("ffffffffff")
    assert "ffffffffff" in str(e.value)


def test_an_ambiguous_name_lists_the_candidates(sessions_root, tmp_path):
    root = tmp_path / "root"
    (root / "--a--").mkdir(parents=True)
    for k in range(3):
        (root / "--a--" / f"s{k}.jsonl").write_text(
            f'{{"type":"session","version":3,"id":"abcd{k}","timestamp":"2026-01-01T00:00:0{k}.000Z","cwd":"/a"}}\n'
        )
    with pytest.raises(arbor.AmbiguousError) as e:
        arbor.Sessions(root).resolve("abcd")
    assert e.value.count == 3
    assert sorted(e.value.candidates) == ["--a--/s0.jsonl", "--a--/s1.jsonl", "--a--/s2.jsonl"]
    assert isinstance(e.value, arbor.ArborError)


def test_a_bad_query_is_a_query_error(cli, sessions_root):
    sessions = arbor.Sessions(sessions_root)
    done = cli.run("search", "re:(", "--all", "--sessions-dir", sessions_root, check=False)
    assert done.returncode != 0
    with pytest.raises(arbor.QueryError) as e:
        sessions.search("re:(")
    assert str(e.value) in done.stderr
    with pytest.raises(arbor.QueryError):
        sessions.search("   ")


def test_a_missing_root_lists_nothing(tmp_path):
    sessions = arbor.Sessions(os.fspath(tmp_path / "none"))
    assert sessions.listing() == []
    assert repr(sessions) == f"Sessions('{tmp_path / 'none'}')"
