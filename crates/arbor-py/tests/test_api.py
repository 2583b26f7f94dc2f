"""What a Python user reads: the stubs shipped in the wheel name exactly what
the module has, and every public name has a docstring."""

import ast
import inspect
from importlib import resources

import arbor_sessions as arbor
from arbor_sessions import _native


def stub():
    files = resources.files("arbor_sessions")
    assert files.joinpath("py.typed").is_file(), "py.typed ships in the wheel"
    return ast.parse(files.joinpath("_native.pyi").read_text())


def stub_names(tree):
    """{top-level name: set of member names} of the stub (TypedDicts and aliases left out)."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = set()
        elif isinstance(node, ast.ClassDef) and not any(
            isinstance(b, ast.Name) and b.id == "TypedDict" for b in node.bases
        ):
            out[node.name] = {
                m.name for m in node.body if isinstance(m, ast.FunctionDef) and not m.name.startswith("__")
            } | {m.target.id for m in node.body if isinstance(m, ast.AnnAssign)}
    return out


def test_the_stubs_name_what_the_module_has():
    names = stub_names(stub())
    runtime = {n for n in dir(_native) if not n.startswith("_")}
    assert set(names) == runtime
    assert set(names) == set(arbor.__all__)
    for name, members in names.items():
        obj = getattr(_native, name)
        if not inspect.isclass(obj) or issubclass(obj, Exception):
            continue
        has = {m for m in dir(obj) if not m.startswith("_")}
        assert members == has, (name, members ^ has)


def test_functions_take_the_stubs_arguments():
    tree = stub()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            want = [a.arg for a in node.args.args + node.args.kwonlyargs]
            got = list(inspect.signature(getattr(arbor, node.name)).parameters)
            assert got == want, node.name
        if isinstance(node, ast.ClassDef) and node.name in ("Session", "Sessions"):
            cls = getattr(arbor, node.name)
            for m in node.body:
                if isinstance(m, ast.FunctionDef) and not m.name.startswith("__") and not m.decorator_list:
                    want = [a.arg for a in m.args.args + m.args.kwonlyargs][1:]
                    got = list(inspect.signature(getattr(cls, m.name)).parameters)
                    got = [p for p in got if p != "self"]
                    assert got == want, (node.name, m.name)


def test_every_public_name_has_a_docstring():
    for name in arbor.__all__:
        obj = getattr(arbor, name)
        assert (obj.__doc__ or "").strip(), name
        if inspect.isclass(obj) and not issubclass(obj, Exception):
            for m in dir(obj):
                if not m.startswith("_"):
                    assert (getattr(obj, m).__doc__ or "").strip(), f"{name}.{m}"
