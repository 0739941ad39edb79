"""docs/EXTENDING.md, done as written: the files of its variant and task recipes are
taken from the doc's own code blocks into a temporary copy of the project (the
variant without its optional yaml, the task with it; nothing else edited), then
the doc's command lines run, shrunk to a few steps, through train, probe,
collect and report."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from experiments.analysis.tables import load
from experiments.analysis.verdicts import at_init

pytestmark = pytest.mark.slow  # they train or start commands: in make test, not make test-quick

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "EXTENDING.md"
# "`src/.../x.py`:" or "Its optional `conf/.../x.yaml`:", then the file in a fenced block
FILE_BLOCK = re.compile(r"^(?:Its optional )?`((?:src|conf)/[\w/.]+)`(?: \([^)]*\))?:\n\n```\w+\n(.*?)```",
                        re.M | re.S)
VARIANT_YAML = "conf/attention/toy_temp.yaml"
# appended to the doc's command lines (a later override wins): the same commands, tiny
SHRINK = {
    "experiments.train": ["train.steps=4", "train.eval_every=2", "train.n_val=16", "train.n_test=16",
                          "train.batch_size=8", "progress=false"],
    # the user's variant beside the paper's two (every registered variant is the doc's default)
    "experiments.probe": ["d_ks=[4,8]", "n_rows=64", "queries_per_batch=32", "theory_rows=256", "n_keys=8",
                          "init=lecun_normal", "variants=[toy_temp,scaled,unscaled]", "progress=false"],
}


def doc_files() -> dict[str, str]:
    return dict(FILE_BLOCK.findall(DOC.read_text()))


def doc_commands() -> list[list[str]]:
    """The doc's `python -m experiments.<command>` lines, as argument lists."""
    lines = [line for block in re.findall(r"```bash\n(.*?)```", DOC.read_text(), re.S)
             for line in block.splitlines()]
    return [shlex.split(line)[2:] for line in lines if line.startswith("python -m experiments.")]


def copy_with_doc_files(tmp_path_factory, name: str, leave_out=()) -> tuple[Path, dict]:
    """A copy of src/, conf/ and scripts/ with the doc's files added (but those in leave_out), and the
    environment that runs commands on it."""
    root = tmp_path_factory.mktemp(name)
    for part in ("src", "conf", "scripts"):
        shutil.copytree(ROOT / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    for path, text in doc_files().items():
        if path not in leave_out:
            (root / path).write_text(text)
    # the suite's compile cache (conftest) is inherited: programs the copy shares with other tests are reused
    env = {**os.environ, "PYTHONPATH": str(root / "src"), "WANDB_MODE": "disabled"}
    return root, env


# Several command lines in one process of the copy, each through its command's own entry point
# (`main`, what `python -m` runs) with its argv: one interpreter start and one jax import for all
# of them. Hydra's global state is cleared between them, as a fresh process would find it.
COMMANDS = textwrap.dedent('''
    import importlib, json, sys
    from hydra.core.global_hydra import GlobalHydra
    for module, *args in json.loads(sys.argv[1]):
        GlobalHydra.instance().clear()
        sys.argv = [module, *args]
        try:
            importlib.import_module(module).main()
        except SystemExit as stop:
            if stop.code:
                sys.exit(f"{module} {args}: exit {stop.code}")
''')


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The copy with the doc's files, the variant's yaml left out."""
    root, env = copy_with_doc_files(tmp_path_factory, "project", leave_out=(VARIANT_YAML,))

    def cli(*lines):
        """Run these command lines ([module, *args] each, shrunk) in order; each must succeed."""
        lines = [[module, *args, *SHRINK.get(module, [])] for module, *args in lines]
        proc = subprocess.run([sys.executable, "-c", COMMANDS, json.dumps(lines)], cwd=root, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc

    return root, cli


def test_the_doc_gives_each_recipe_its_files():
    assert set(doc_files()) == {"src/attention/toy_temp.py", VARIANT_YAML,
                                "src/experiments/tasks/toy_copy.py", "conf/task/toy_copy.yaml"}
    assert {args[0] for args in doc_commands()} == {"experiments.train", "experiments.probe",
                                                   "experiments.collect", "experiments.report"}


def test_the_doc_commands_run(project):
    """Every command of the doc, in its order: the toy variant trained without a yaml, probed
    beside the paper's variants over three seeds (sub-claim 3b gets an interval), collected
    and reported; the toy task trained, also at another size, and probed."""
    root, cli = project
    results = root / "results"
    commands = doc_commands()
    report = [c[0] for c in commands].index("experiments.report") + 1
    cli(*commands[:report])  # the variant's, up to its report: read before the task's commands add to it
    summary = pd.read_parquet(results / "summary.parquet")
    probe = pd.read_parquet(results / "probe.parquet")
    assert (results / "REPORT.md").is_file()
    cli(*commands[report:])
    assert len(summary) == 1 and summary["attention"].tolist() == ["toy_temp"]
    assert (summary["status"] == "completed").all()
    assert {"toy_temp", "scaled", "unscaled"} <= set(probe["attention"]) and set(probe["seed"]) == {0, 1, 2}
    slopes = at_init.ratio_slopes(load.probe_rows(probe))
    assert {part.n for part in at_init.gradient_rule(slopes).values()} == {3}  # 3b: three seeds
    tasks = lambda folder: sorted(p.name.split("-")[2] for p in (folder / "runs").iterdir())
    assert tasks(results) == ["assoc_recall", "toy_copy"]
    assert (tasks(results / "init_temp_2"), tasks(results / "seq_len_32")) == (["assoc_recall"], ["toy_copy"])
    assert set(pd.read_parquet(results / "probe.parquet")["task"]) == {"toy_copy"}


# train's pre-flight (what the command runs before anything else, tests/test_bad_input.py) on each
# command line, in one process of the copy: [exit code, stderr] per command line
PREFLIGHT = textwrap.dedent('''
    import contextlib, io, json, sys
    from experiments.app import config, preflight, ranges
    out = []
    for argv in json.loads(sys.argv[1]):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                preflight.check_command_line("train", argv, config.validate, ranges.validate_jobs)
                code = 0
            except SystemExit as stop:
                code = stop.code
        out.append([code, err.getvalue()])
    print(json.dumps(out))
''')
TYPOS = {"option": ["attention=toy_temp", "attention.init_tmp=2"],
         "value": ["attention=toy_temp", "attention.init_temp=-1"], "name": ["attention=toy_tmp"]}


@pytest.fixture(scope="module")
def typos(project):
    """{typo: (exit code, stderr)} of train's pre-flight on each of TYPOS in the copy."""
    root, _ = project
    proc = subprocess.run([sys.executable, "-c", PREFLIGHT, json.dumps(list(TYPOS.values()))], cwd=root,
                          env={**os.environ, "PYTHONPATH": str(root / "src")}, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(zip(TYPOS, map(tuple, json.loads(proc.stdout.strip().splitlines()[-1]))))


def test_toy_variant_option_typo_fails_naming_the_key(typos):
    code, err = typos["option"]
    assert code == 2 and "init_tmp" in err and "Traceback" not in err
    code, err = typos["value"]
    assert code == 2 and "attention.init_temp" in err


def test_a_misspelt_name_lists_the_variant_without_a_yaml(typos):
    code, err = typos["name"]
    [line] = err.strip().splitlines()
    assert code == 2 and "toy_temp" in line.split("allowed: ")[1].split(", ")
