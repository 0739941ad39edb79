"""Safety: nothing in src/ or scripts/ unpickles, or evaluates a string as code.

Everything read back is parquet, JSON or YAML through a safe loader. The scan
works on the syntax tree (comments, docstrings and names such as `log_eval`
cannot trip it) and names the file and line of every hit. Nothing is
allowlisted.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("src", "scripts")

UNSAFE_MODULES = {"pickle", "_pickle", "cPickle", "cloudpickle", "dill", "shelve", "marshal"}
UNSAFE_BUILTINS = {"eval", "exec", "compile", "__import__"}  # code from a string
UNSAFE_CALLS = {  # attribute name -> why
    "eval": "evaluates a string expression (pandas.eval, DataFrame.eval)",
    "read_pickle": "unpickles", "to_pickle": "writes a pickle, which something would unpickle",
    "unsafe_load": "YAML that can build any object", "full_load": "YAML beyond the safe subset",
    "full_load_all": "YAML beyond the safe subset", "unsafe_load_all": "YAML that can build any object",
}
SAFE_YAML_LOADERS = {"SafeLoader", "CSafeLoader", "BaseLoader", "CBaseLoader"}
UNSAFE_YAML_LOADERS = {"Loader", "UnsafeLoader", "FullLoader", "CLoader", "CUnsafeLoader", "CFullLoader"}


def _dotted(node: ast.AST) -> str:
    """'a.b.c' for a Name/Attribute chain, '' otherwise."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _keyword(call: ast.Call, name: str):
    return next((k.value for k in call.keywords if k.arg == name), None)


def _call_hit(call: ast.Call) -> str | None:
    name = _dotted(call.func)
    last = name.rsplit(".", 1)[-1]
    if isinstance(call.func, ast.Name) and last in UNSAFE_BUILTINS:
        return f"{last}() runs a string as code"
    if isinstance(call.func, ast.Attribute) and last in UNSAFE_CALLS:
        return f"{name}(): {UNSAFE_CALLS[last]}"
    if name in ("yaml.load", "yaml.load_all"):
        loader = _keyword(call, "Loader") or (call.args[1] if len(call.args) > 1 else None)
        if loader is None or _dotted(loader).rsplit(".", 1)[-1] not in SAFE_YAML_LOADERS:
            return f"{name}() without Loader=yaml.SafeLoader"
    if last == "load" and name.split(".")[0] in ("torch", "jnp", "joblib"):
        return f"{name}() unpickles"
    if name in ("np.load", "numpy.load"):
        allow = _keyword(call, "allow_pickle")
        if allow is not None and not (isinstance(allow, ast.Constant) and allow.value is False):
            return f"{name}(allow_pickle=...) can unpickle"
    return None


def scan_source(source: str, filename: str) -> list[str]:
    """'file:line: what' for every unsafe construct in one Python source."""
    hits = []
    for node in ast.walk(ast.parse(source, filename)):
        what = None
        if isinstance(node, ast.Import):
            bad = [a.name for a in node.names if a.name.split(".")[0] in UNSAFE_MODULES]
            what = f"import {', '.join(bad)}" if bad else None
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in UNSAFE_MODULES:
            what = f"from {node.module} import ..."
        elif isinstance(node, ast.Call):
            what = _call_hit(node)
        elif isinstance(node, ast.Name) and node.id in UNSAFE_BUILTINS and isinstance(node.ctx, ast.Load):
            what = f"{node.id} used as a value (e.g. registered as a resolver)"
        elif isinstance(node, ast.Attribute) and node.attr in UNSAFE_YAML_LOADERS \
                and _dotted(node).startswith("yaml."):
            what = f"{_dotted(node)}: a YAML loader beyond the safe subset"
        if what:
            hits.append(f"{filename}:{node.lineno}: {what}")
    return sorted(set(hits), key=lambda h: int(h.split(":")[1]))


def python_files() -> list[Path]:
    files = [p for d in SCANNED for p in (ROOT / d).rglob("*.py")]
    # scripts without the .py suffix but with a python shebang
    files += [p for p in (ROOT / "scripts").iterdir() if p.is_file() and p.suffix == ""
              and p.read_text(errors="ignore").startswith("#!/usr/bin/env python")]
    return sorted(files)


def test_no_pickle_or_eval_in_src_and_scripts():
    files = python_files()
    assert any(p.name == "results.py" for p in files)  # the scan sees the code it is meant to
    hits = [h for p in files for h in scan_source(p.read_text(), str(p.relative_to(ROOT)))]
    assert not hits, "unsafe loading or evaluation:\n" + "\n".join(hits)


def test_no_python_code_in_shell_scripts_unpickles():
    for path in sorted((ROOT / "scripts").glob("*.sh")) + sorted((ROOT / "scripts").glob("*.sbatch")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            assert not any(w in line for w in ("pickle", "yaml.load(", "torch.load")), f"{path}:{n}: {line}"


UNSAFE_SNIPPETS = [
    "import pickle", "from dill import loads", "import cloudpickle as cp",
    "eval(cfg.expr)", "exec(text)", "x = compile(src, 'f', 'exec')",
    "OmegaConf.register_new_resolver('eval', eval)",
    "pd.read_pickle(path)", "df.to_pickle(path)", "pd.eval('a + b')", "df.eval(expr)",
    "yaml.load(f)", "yaml.load(f, Loader=yaml.Loader)", "yaml.load(f, yaml.FullLoader)",
    "yaml.unsafe_load(f)", "yaml.full_load(f)",
    "np.load(path, allow_pickle=True)", "numpy.load(p, allow_pickle=flag)",
    "torch.load(path)", "jnp.load(path)", "joblib.load(path)",
]
SAFE_SNIPPETS = [
    "yaml.load(f, Loader=yaml.SafeLoader)", "yaml.safe_load(f)", "np.load(path)",
    "np.load(path, allow_pickle=False)", "OmegaConf.load(path)", "json.loads(text)",
    "pd.read_parquet(path)", "mirror.log_eval(row, step)", "fn.lower(x).compile()",
    "re.compile('a+')", "jax.eval_shape(f, x)", "'''eval(x) in a docstring'''  # eval(x)",
]


@pytest.mark.parametrize("snippet", UNSAFE_SNIPPETS)
def test_scanner_catches(snippet):
    assert scan_source(snippet, "snippet.py"), snippet


@pytest.mark.parametrize("snippet", SAFE_SNIPPETS)
def test_scanner_passes(snippet):
    assert scan_source(snippet, "snippet.py") == []
