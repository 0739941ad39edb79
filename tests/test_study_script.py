"""scripts/answer_study.sh, the next reference as one command: every preset and cell it names
exists, every cell the answer presets select on is confirmed, after its selection, and it carries
and trains whole what scripts/study_plan.py projects; that projection sums its phases."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
SCRIPT = ROOT / "scripts" / "answer_study.sh"


def _commands() -> list[tuple[str, dict]]:
    """(verb, {key: value}) for each train / confirm line of the script, in order."""
    out = []
    for line in SCRIPT.read_text().splitlines():
        words = shlex.split(line) if re.match(r"^(train|confirm) ", line) else []
        if words:
            out.append((words[0], dict(w.split("=", 1) for w in words[1:])))
    return out


def _selected_cells(args: dict) -> list[str]:
    """The cells a train line selects on: its cell=, else its preset's sweep."""
    if "cell" in args:
        return args["cell"].split(",")
    preset = OmegaConf.load(CONF / "experiment" / f"{args['experiment']}.yaml")
    sweep = OmegaConf.select(preset, "hydra.sweeper.params.cell")
    return str(sweep).split(",") if sweep else []


def test_every_preset_and_cell_named_exists():
    for verb, args in _commands():
        if "experiment" in args:
            assert (CONF / "experiment" / f"{args['experiment']}.yaml").exists(), args
        for cell in ([args["for_cell"]] if "for_cell" in args else _selected_cells(args)):
            assert (CONF / "cell" / f"{cell}.yaml").exists(), (verb, cell)


def test_every_cell_selected_on_is_confirmed_after_its_last_selection():
    commands = _commands()
    last_selection, confirmed = {}, {}
    for i, (verb, args) in enumerate(commands):
        if verb == "train" and args.get("experiment", "").startswith("answer"):
            for cell in _selected_cells(args):
                last_selection[cell] = i
        elif verb == "confirm":
            confirmed[args["for_cell"]] = i
    assert last_selection and set(last_selection) == set(confirmed)
    assert all(confirmed[c] > last_selection[c] for c in confirmed), (last_selection, confirmed)


def _study_plan():
    """scripts/study_plan.py as a module (registered first: its dataclasses look themselves up)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("study_plan", ROOT / "scripts" / "study_plan.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_plan_projects_every_cell_from_the_committed_tables_and_sums_its_phases():
    plan = _study_plan()
    summary = pd.read_parquet(ROOT / "results" / "reference" / "summary.parquet")
    table = plan.plan(summary)
    assert list(table.index) == [c.name for c in plan.CELLS]
    assert (table.to_numpy() >= 0).all()
    assert table["total"].to_numpy() == pytest.approx(table[list(plan.PHASES)].sum(axis=1).to_numpy())
    extras = plan.TEXT_HOURS + sum(plan.EXTRAS_HOURS.values())
    assert plan.total_hours(table) == pytest.approx(table["total"].sum() + extras)
    assert plan.total_hours(table) < plan.total_hours(plan.plan(summary, reuse=False))


def test_a_job_the_committed_study_lacks_is_projected_from_its_neighbours():
    plan = _study_plan()
    job = lambda train, seeds=8: plan.Job(train, 10.0, 0.0, 0.0, seeds)
    jobs = {("t", "adam", "selection", "unscaled", 128): job(100.0), ("t", "adam", "selection", "unscaled", 512): job(400.0),
            ("t", "adam", "selection", "scaled", 64): job(50.0), ("t", "adam", "selection", "scaled", 1024): job(150.0),
            ("t", "adam", "selection", "additive_wide", 64): job(20.0)}
    assert plan.estimate(jobs, "t", "adam", "selection", "unscaled_init", 256).train == pytest.approx(200.0)
    assert plan.estimate(jobs, "t", "adam", "selection", "additive_wide", 1024).train == pytest.approx(60.0)
    assert plan.confirmation(job(90.0, seeds=18), 8) == pytest.approx(50.0)
    with pytest.raises(KeyError):
        plan.estimate(jobs, "t", "adam", "selection", "qk_norm", 8)


def test_the_script_trains_whole_and_carries_what_the_plan_projects():
    plan = _study_plan()
    joined = SCRIPT.read_text().replace("\\\n", " ")
    carry = shlex.split(next(line for line in joined.splitlines() if line.startswith("carry selection ")))
    flags = dict(zip(carry[4::2], carry[5::2]))  # after: carry selection FROM TO
    whole_cells = {c.name for c in plan.CELLS if c.whole_curves}
    assert set(flags["--whole-cells"].split(",")) == whole_cells and flags["--whole-seeds"] == str(plan.WHOLE_SEEDS)
    assert set(flags["--whole-variants"].split(",")) | {"unscaled_init"} == set(plan.WHOLE_VARIANTS)
    spared = [args for verb, args in _commands() if "train.prune.spare_seeds" in args]
    assert {a["cell"] for a in spared} == whole_cells
    assert all(a["train.prune.spare_seeds"] == str(plan.WHOLE_SEEDS) for a in spared)
    assert all(set(a["attention"].replace("mup8", "mup").split(",")) == set(plan.WHOLE_VARIANTS) for a in spared)
