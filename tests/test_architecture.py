"""The architecture, checked on the source: layers, the adapter boundary, module sizes, rule codes.

Layers, lowest first; a module may import from its own layer and the ones below, never above
(imports inside functions count too). docs/design.md draws the same picture.
"""

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "scanprobe"

LAYERS = [
    ("contracts", "errors", "records", "analysis.sizes", "analysis", "runners.exits"),
    ("backends",),
    ("walk", "analysis.history"),
    ("rules",),
    ("results", "settings", "inputs"),
    ("loading", "scancalls", "bindings", "model_targets"),
    ("fixes",),
    ("pipeline",),
    ("runners",),
    ("report",),
    ("commands",),
    ("api", "inspection", "ipython", "pytest_plugin"),
    ("cli", "__main__", ""),
]
#: The graph libraries; only their adapters import them.
LIBRARIES = ("theano", "pytensor", "aesara", "pymc", "pymc3")


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        yield ".".join(parts), path


def _layer(module: str) -> int:
    best, rank = -1, None
    for i, names in enumerate(LAYERS):
        for name in names:
            if module == name or module.startswith(name + ".") or name == "":
                length = len(name) if name else 0
                if length > best:
                    best, rank = length, i
    return rank


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, node.lineno
            for a in node.names:  # from scanprobe import records -> scanprobe.records
                yield f"{node.module}.{a.name}", node.lineno


def test_no_import_goes_up_a_layer():
    problems = []
    for module, path in _modules():
        own = _layer(module)
        for name, line in _imports(path):
            if not name.startswith("scanprobe."):
                continue
            target = name[len("scanprobe."):]
            if not (PACKAGE / (target.replace(".", "/") + ".py")).exists() and not (PACKAGE / target.replace(".", "/")).is_dir():
                continue  # ``from scanprobe.x import name``: the name is not a module
            if _layer(target) > own:
                problems.append(f"{path.relative_to(PACKAGE)}:{line}: {module} (layer {own}) imports {target} "
                                f"(layer {_layer(target)})")
    assert not problems, "\n".join(problems)


def test_only_adapters_import_a_backend():
    adapters = {PACKAGE / "backends" / f for f in ("theano.py", "pytensor.py", "aesara.py", "pymc.py")}
    problems = []
    for _, path in _modules():
        if path in adapters:
            continue
        for name, line in _imports(path):
            if name.split(".")[0] in LIBRARIES:
                problems.append(f"{path.relative_to(PACKAGE)}:{line}: imports {name}")
    assert not problems, "\n".join(problems)


def test_no_module_over_600_lines():
    long = {str(p.relative_to(PACKAGE)): n for _, p in _modules() if (n := len(p.read_text().splitlines())) > 600}
    assert not long, long


def test_rule_codes_live_in_rules():
    """No rule code as a string constant outside rules/ (docstrings and prose may name them)."""
    code = re.compile(r"^SP\d{3}$")
    problems = []
    for module, path in _modules():
        if module.startswith("rules"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and code.match(node.value):
                problems.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value!r}")
    assert not problems, "\n".join(problems)


def test_backend_names_live_in_the_registry():
    """Backend names appear as string constants only in the registry and the adapters."""
    from scanprobe.backends import NAMES

    allowed = {PACKAGE / "backends" / "__init__.py"} | {PACKAGE / "backends" / f"{n}.py" for n in NAMES}
    problems = []
    for _, path in _modules():
        if path in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in NAMES:
                problems.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value!r}")
    assert not problems, "\n".join(problems)


#: The op vocabulary: the one module that knows ops by their class names.
VOCABULARY = PACKAGE / "backends" / "ops.py"
#: Where op kinds are asked about: they ask the vocabulary.
ASKERS = ("walk", "fixes", "rules", "analysis")


def _op_class_names() -> set[str]:
    """Every op class name the vocabulary knows, and every Op subclass of the installed backend."""
    from scanprobe.backends import get_backend, ops

    names = set(ops.KNOWN)
    import os

    wanted = os.environ.get("SAMPLE_BACKEND")
    if wanted:
        backend = get_backend(wanted)
        backend.load([])
        api = backend.api
        bases = [c for c in api.Scan.__mro__ + type(api.T.add.scalar_op).__mro__ if c.__name__ in ("Op", "ScalarOp")]
        stack, seen = list(bases), set()
        while stack:
            cls = stack.pop()
            if cls in seen:
                continue
            seen.add(cls)
            names.add(cls.__name__)
            stack.extend(cls.__subclasses__())
    return {n for n in names if len(n) > 2}


def test_op_kinds_come_from_the_vocabulary():
    """Outside backends/ops.py no string constant names an op class (a comparison such as
    ``type(op).__name__ == "DimShuffle"`` or ``"Subtensor" in name``, a table keyed by class
    names), and walk/, fixes/, rules/ and analysis/ never read a ``__name__``: they ask
    ``backends.ops`` what kind an op is. Backend adapters (which hold the library's own names)
    and prose (docstrings) are exempt."""
    names = _op_class_names()
    adapters = {PACKAGE / "backends" / f for f in ("theano.py", "pytensor.py", "aesara.py", "pymc.py", "family.py",
                                                     "base.py")}
    problems = []
    for module, path in _modules():
        if path == VOCABULARY or path in adapters:
            continue
        tree = ast.parse(path.read_text())
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                      and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                if node.value in names:
                    problems.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: op class name {node.value!r}")
            if module.split(".")[0] in ASKERS and isinstance(node, ast.Attribute) and node.attr == "__name__":
                problems.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: reads __name__ (ask backends.ops)")
    assert not problems, "\n".join(problems)


def test_the_vocabulary_check_catches_a_class_name_comparison(tmp_path):
    """The check above is not vacuous: the patterns the architecture review counted are caught."""
    names = _op_class_names()
    for code in ('type(op).__name__ == "DimShuffle"', 'name in ("Dot22", "_dot")', '"Subtensor" in name'):
        consts = [n.value for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Constant)]
        assert any(c in names for c in consts), code


def test_the_loading_session_gives_what_the_walk_asks():
    """walk/ reads the loading session only through ``walk.session.Session``: every capability it
    declares is there, with the same parameters, on ``loading.CaptureSession``."""
    import inspect

    from scanprobe.loading import CaptureSession
    from scanprobe.walk.session import Session

    declared = [n for n, v in vars(Session).items() if callable(v) and not n.startswith("_")]
    assert declared
    for name in declared:
        mine = list(inspect.signature(getattr(CaptureSession, name)).parameters)
        assert mine == list(inspect.signature(getattr(Session, name)).parameters), name
    assert "scan_calls" in Session.__annotations__
    used = set()
    for path in (PACKAGE / "walk").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "session":
                used.add(node.attr)
    assert used <= set(declared) | {"scan_calls"}, f"walk/ uses session members it does not declare: {used - set(declared)}"
