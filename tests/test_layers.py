"""The source tree's folders are layers: no import climbs, no import cycle.

Read from the syntax tree of every module under src/ (nothing is imported or
run). Every import counts, a lazy one inside a function too: a lazy import
hides a dependency from the reader, it does not remove it.

Layer order, lowest first (a module may import its own layer and those below):

    attention < tasks < training < store < instruments < analysis < app < entry points

`experiments/<command>.py` are the entry points; `experiments/__init__.py`
belongs to no layer and must import nothing of the project.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
LAYERS = ["attention", "experiments.tasks", "experiments.training", "experiments.store",
          "experiments.instruments", "experiments.analysis", "experiments.app", "experiments"]
MAX_LINES = 300


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def imported(path: Path, name: str, known: set[str]) -> set[str]:
    """Project modules that `name` (at `path`) imports, relative imports resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import mod` imports pkg.mod when that is a module
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in known or t.split(".")[0] in ("attention", "experiments")}
    return {_known_prefix(t, known) for t in found} - {name}


def _known_prefix(target: str, known: set[str]) -> str:
    while target not in known and "." in target:
        target = target.rpartition(".")[0]
    return target


def layer_of(name: str) -> int:
    """Index in LAYERS of the most specific layer that holds `name`."""
    fits = [layer for layer in LAYERS if name == layer or name.startswith(layer + ".")]
    return LAYERS.index(max(fits, key=len))


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imported(path, name, known) for name, path in mods.items()}


def test_every_module_sits_in_a_layer():
    for name in modules():
        assert name.split(".")[0] in ("attention", "experiments"), name
        if name.startswith("experiments.") and name.count(".") == 1:
            # top level of experiments/: entry points only (and the layer packages)
            assert name in LAYERS or (SRC / "experiments" / f"{name.split('.')[1]}.py").exists()


def test_no_import_climbs_a_layer():
    climbs = []
    for name, targets in graph().items():
        if name == "experiments":
            climbs += [f"experiments/__init__.py imports {t}" for t in targets]
            continue
        for target in targets:
            if target == "experiments":
                continue  # the package itself: imported by every `experiments.x` import
            if layer_of(target) > layer_of(name):
                climbs.append(f"{name} ({LAYERS[layer_of(name)]}) imports {target} "
                              f"({LAYERS[layer_of(target)]})")
    assert not climbs, "imports that climb a layer:\n" + "\n".join(climbs)


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None (depth-first search)."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_cycle():
    edges = {n: {t for t in ts if t != "experiments"} for n, ts in graph().items()}
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_checks_can_fail():
    """The cycle finder and the layer order catch what they are meant to."""
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    assert layer_of("experiments.analysis.stats") > layer_of("experiments.training.loop")
    assert layer_of("experiments.train") == LAYERS.index("experiments")
    known = set(modules())
    climbing = imported(SRC / "experiments" / "training" / "step.py", "experiments.training.step",
                        known | {"experiments.app.progress"})
    assert "experiments.training.model" in climbing


@pytest.mark.parametrize("name", sorted(modules()))
def test_module_is_short(name):
    lines = len(modules()[name].read_text().splitlines())
    assert lines <= MAX_LINES, f"{name}: {lines} lines (> {MAX_LINES}); split it along a seam"


def test_every_package_says_what_it_holds():
    for init in sorted(SRC.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc.split()) >= 8, f"{init.relative_to(SRC)}: no docstring"


# analysis/ is split by the reader's question; its rooms are layers too, lowest first
ANALYSIS_ROOMS = ["stats", "tables", "lr", "results", "verdicts", "figures", "render", "temperature", "init_gain"]


def test_analysis_rooms_do_not_climb():
    prefix = "experiments.analysis."
    room = lambda name: ANALYSIS_ROOMS.index(name[len(prefix):].split(".")[0])  # noqa: E731
    mods = [n for n in modules() if n.startswith(prefix)]
    assert all(n[len(prefix):].split(".")[0] in ANALYSIS_ROOMS for n in mods), mods
    climbs = [f"{n} imports {t}" for n, targets in graph().items() if n.startswith(prefix)
              for t in targets if t.startswith(prefix) and room(t) > room(n)]
    assert not climbs, "analysis imports that climb a room:\n" + "\n".join(climbs)
