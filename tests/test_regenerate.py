"""One command regenerates any folder: scripts/regenerate.sh (experiments.regenerate) hands each
key to the steps that read it, refuses a key none reads before anything runs, and stops at a
failing step."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from fixtures_results import write_synthetic_results
from test_bad_input import snapshot, write_run

from experiments import regenerate

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "regenerate.sh"


def script(results: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RESULTS": str(results),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=results.parent, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture
def steps_run(monkeypatch):
    """The steps main() would run, as {step: arguments}, none of them run; a step's exit code
    is taken from `codes`."""
    ran, codes = {}, {}

    def fake(step, args):
        ran[step] = args
        return codes.get(step, 0)

    monkeypatch.setattr(regenerate, "run_step", fake)
    return ran, codes


def test_each_key_goes_to_the_steps_that_read_it(tmp_path, steps_run):
    ran, _ = steps_run
    write_run(tmp_path, "r1")  # a run folder: collect runs
    root = tmp_path / "res"
    assert regenerate.main(["results_dir=elsewhere", f"results_dir={root}", "keep_tabled=true",
                            "primary_task=assoc_recall", "alike_margin=0.1"]) == 0
    assert ran == {"collect": [f"results_dir={root}", "keep_tabled=true"],
                   **{step: [f"results_dir={root}", "primary_task=assoc_recall", "alike_margin=0.1"]
                      for step in ("plot", "report", "dashboard")}}


@pytest.mark.parametrize("args", [["primary_tsk=mqar"], ["keep_tabled"], ["alike_margin=-1"],
                                  ["alike_margin=abc"]])
def test_a_bad_key_or_value_runs_nothing(tmp_path, steps_run, capsys, args):
    ran, _ = steps_run
    assert regenerate.main([f"results_dir={tmp_path}", *args]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: {args[0].split('=')[0]}: ") and ran == {}


def test_a_failing_step_stops_the_rest_with_its_code(tmp_path, steps_run):
    ran, codes = steps_run
    write_run(tmp_path, "r1")
    codes["plot"] = 3
    assert regenerate.main([f"results_dir={tmp_path / 'res'}"]) == 3
    assert list(ran) == ["collect", "plot"]


def test_a_folder_of_tables_alone_skips_collect(tmp_path, steps_run):
    ran, _ = steps_run
    root = write_synthetic_results(tmp_path / "res")
    assert regenerate.main([f"results_dir={root}", "keep_tabled=true"]) == 0
    assert list(ran) == ["plot", "report", "dashboard"]


def test_unknown_key_from_the_script_names_every_allowed_key(tmp_path):
    root = write_synthetic_results(tmp_path / "res")
    before = snapshot(tmp_path)
    proc = script(root, "primary_tsk=mqar")
    assert proc.returncode == 2 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: primary_tsk: ")
    assert all(key in line for key in regenerate.COLLECT_KEYS + regenerate.ANALYSIS_KEYS)
    assert snapshot(tmp_path) == before
