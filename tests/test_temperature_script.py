"""scripts/temperature_study.sh for each of its presets, with a stand-in `python` that records each
command instead of running it: every arm trains its cells, then confirms, then regenerates the
folder it trained into (regenerate reads the folder from RESULTS, not from an argument)."""
from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "temperature_study.sh"


def _commands(tmp_path: Path, experiment: str) -> list[list[str]]:
    bin_dir, log = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    stand_in = bin_dir / "python"
    stand_in.write_text(f'#!/usr/bin/env bash\nprintf "%q " "$@" >> {shlex.quote(str(log))}\necho >> {shlex.quote(str(log))}\n')
    stand_in.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "EXPERIMENT": experiment,
           "RESULTS": str(tmp_path / "out")}
    subprocess.run(["bash", str(SCRIPT)], env=env, check=True, capture_output=True, timeout=60)
    return [shlex.split(line) for line in log.read_text().splitlines()]


@pytest.mark.parametrize("experiment", ["temperature", "temperature_mqar", "temperature_qk_rms",
                                        "temperature_lr_wide", "temperature_qk_rms_lr_wide"])
def test_each_arm_trains_then_confirms_then_regenerates_its_folder(tmp_path, experiment):
    calls = _commands(tmp_path, experiment)
    modules = [c[1] for c in calls]
    assert set(modules[:-2]) == {"experiments.train"} and modules[-2:] == ["experiments.temperature_confirm",
                                                                           "experiments.regenerate"]
    folder = f"results_dir={tmp_path / 'out'}"
    assert all(folder in c for c in calls[:-1])
    assert calls[-1][2:] == [f"results_dir='{tmp_path / 'out'}'"]  # scripts/regenerate.sh's quoting
    assert all(f"experiment={experiment}" in c for c in calls[:-2])


def test_mqar_couples_its_sequence_to_its_keys(tmp_path):
    trains = [dict(a.split("=", 1) for a in c[3:] if "=" in a) for c in _commands(tmp_path, "temperature_mqar")[:-2]]
    assert {int(t["task.n_keys"]) for t in trains} == {2, 8, 32}
    assert all(int(t["task.seq_len"]) == 4 * int(t["task.n_keys"]) for t in trains)
    assert sum(t.get("attention") == "learned_temperature" for t in trains) == 3
