"""The next reference's projected time, per cell and phase, from the committed job walls.

    .venv/bin/python scripts/study_plan.py [results/reference]

Reads the committed summary.parquet alone (about a second; no training) and prints, per cell
of scripts/answer_study.sh, the hours of each phase, the total with the text cell and the
extras, and beside it the same study with no selection run reused (docs/NEXT_REFERENCE.md).

A job is one (task, optimizer, phase, variant, d_k): all its lanes in one program, so its wall
is its longest lane's train_time_s plus its compile_time_s. Where the committed study has no
such job: d_k = 256 is the geometric mean of 128 and 512 (the jobs' cost grows about as a power
of d_k); unscaled_init costs what unscaled does (the same score, another init); additive_wide
above 64 costs its d_k = 64 job times scaled's growth from 64 (its d_hidden stays 64, so its
step grows with the projections, as scaled's does). A confirmation job's training scales with
its seeds (unpruned lanes at one rate); its compile does not.

The plan (docs/NEXT_REFERENCE.md): a committed selection job is reused (its seeds 0-7 carried,
scripts/reuse_selection.py), except that the whole-curve seeds 0-2 of the WHOLE_VARIANTS in
the Adam token cells are retrained at every rate to the budget (their rates' lane-steps at the job's
own cost per lane-step). A new job trains seeds 0-7, its whole-curve seeds spared
(train.prune.spare_seeds: the lane-steps their pruned lanes would have gone on for). Stage 2 is
projected where the committed study was undecided (the alike clause: additive and unscaled at
the declared alike d_ks, topped up to MAX_SEEDS); its bound adds the ahead clauses' pairs at the
largest d_k. The committed study's commands took OVERHEAD times its job walls (4.5 h against
4.09 h: process starts, collects, writes).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

SELECTION_SEEDS = 8  # seeds 0-7 choose the rate (conf/experiment/answer.yaml)
WHOLE_SEEDS = 3  # seeds 0-2 trained at every rate to the budget: the lr slopes' whole curves
WHOLE_VARIANTS = ("scaled", "unscaled", "mup", "unscaled_init")  # the variants with an Adam prediction
FIRST_SEEDS, MAX_SEEDS = 8, 24  # conf/analysis.yaml two_stage: stage 1, the cap with stage 2
OVERHEAD = 1.10
TEXT_HOURS = 3.0  # the text cell (results/text), counted as the budget counts it
BUDGET_HOURS = 7.0
EXTRAS_HOURS = {"mup_width (24 runs, measured)": 1.3 / 60, "carry, probe, cost, collect, report, plots": 20 / 60}
TOKEN_D_KS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


@dataclass(frozen=True)
class Cell:
    name: str
    task: str
    optimizer: str
    variants: tuple[str, ...]
    d_ks: tuple[int, ...] = TOKEN_D_KS
    alike_d_ks: tuple[int, ...] = (4, 8)
    whole_curves: bool = False  # the WHOLE_VARIANTS' seeds 0-2 trained at every rate to the budget

    def whole(self, variant: str) -> bool:
        """Whether the variant's seeds 0-2 are trained whole here."""
        return self.whole_curves and variant in WHOLE_VARIANTS


BILINEAR = ("scaled", "unscaled", "additive", "qk_norm")
CELLS = (  # scripts/answer_study.sh's order: cheapest first
    Cell("sgd_assoc_recall", "assoc_recall", "sgd", BILINEAR + ("unscaled_init", "additive_wide")),
    Cell("adam_assoc_recall", "assoc_recall", "adam", BILINEAR + ("mup", "unscaled_init", "additive_wide"),
         whole_curves=True),
    Cell("adam_vector_retrieval_d8", "vector_retrieval", "adam", BILINEAR + ("unscaled_init",),
         TOKEN_D_KS[2:], (8,)),
    Cell("adam_mqar", "mqar", "adam", BILINEAR + ("mup", "unscaled_init", "additive_wide"), whole_curves=True),
)


@dataclass(frozen=True)
class Job:
    """Seconds of one job (training, compile); the seconds its whole-curve seeds' pruned lanes
    would add trained on (spare) and those seeds' lanes take trained whole from the start
    (whole); its seeds."""
    train: float
    compile: float
    spare: float = 0.0
    whole: float = 0.0
    seeds: int = SELECTION_SEEDS


def committed_jobs(summary: pd.DataFrame, confirm_from: int = SELECTION_SEEDS) -> dict[tuple, Job]:
    """{(task, optimizer, phase, variant, d_k): Job} of the committed study's answer presets."""
    s = summary[summary["experiment"].astype(str).str.startswith("answer")]
    s = s.assign(phase=np.where(s["seed"] >= confirm_from, "confirmation", "selection"))
    left = (s["status"].eq("pruned") & (s["seed"] < WHOLE_SEEDS)) * (s["steps"] - s["steps_done"])
    s = s.assign(left=left)
    out = {}
    for key, g in s.groupby(["task", "optimizer", "phase", "attention", "d_k"]):
        train = float(g["train_time_s"].max())
        per_step = train / max(float(g["steps_done"].sum()), 1.0)
        whole = per_step * WHOLE_SEEDS * g["lr"].nunique() * float(g["steps"].max())
        out[key] = Job(train, float(g["compile_time_s"].max()), per_step * float(g["left"].sum()), whole,
                       int(g["seed"].nunique()))
    return out


def geometric(a: Job, b: Job) -> Job:
    mean = lambda x, y: math.sqrt(x * y) if x > 0 and y > 0 else (x + y) / 2
    return Job(mean(a.train, b.train), mean(a.compile, b.compile), mean(a.spare, b.spare),
               mean(a.whole, b.whole), a.seeds)


def estimate(jobs: dict, task: str, optimizer: str, phase: str, variant: str, d_k: int) -> Job:
    """The committed job, else the stand-in the module docstring names; KeyError where none is."""
    source = "unscaled" if variant == "unscaled_init" else variant
    key = (task, optimizer, phase, source, d_k)
    if key in jobs:
        return jobs[key]
    if d_k == 256:
        return geometric(*(estimate(jobs, task, optimizer, phase, variant, d) for d in (128, 512)))
    if variant == "additive_wide" and d_k > 64:
        growth = lambda d: estimate(jobs, task, optimizer, phase, "scaled", d).train
        base, ratio = estimate(jobs, task, optimizer, phase, variant, 64), max(growth(d_k) / growth(64), 1.0)
        return replace(base, train=base.train * ratio, spare=base.spare * ratio, whole=base.whole * ratio)
    raise KeyError(key)


def confirmation(job: Job, seeds: int) -> float:
    """Seconds of a confirmation job of `seeds` seeds, from one of job.seeds seeds."""
    return job.train * seeds / job.seeds + job.compile


def selection(jobs: dict, cell: Cell, variant: str, d_k: int, reuse: bool) -> tuple[float, float]:
    """(selection seconds, whole-curve seconds) of one (variant, d_k)."""
    s = estimate(jobs, cell.task, cell.optimizer, "selection", variant, d_k)
    reused = reuse and (cell.task, cell.optimizer, "selection", variant, d_k) in jobs
    whole = cell.whole(variant)
    if reused:
        return 0.0, (s.whole + s.compile) if whole else 0.0
    return s.train + s.compile, s.spare if whole else 0.0


def cell_hours(jobs: dict, cell: Cell, reuse: bool = True) -> dict[str, float]:
    """Hours of each phase of one cell, its commands' overhead included."""
    sums = dict.fromkeys(("selection", "whole curves", "confirmation", "stage 2", "stage 2 bound"), 0.0)
    for variant in cell.variants:
        for d_k in cell.d_ks:
            sel, whole = selection(jobs, cell, variant, d_k, reuse)
            c = estimate(jobs, cell.task, cell.optimizer, "confirmation", variant, d_k)
            top_up = confirmation(c, MAX_SEEDS - FIRST_SEEDS)
            alike = variant in ("additive", "unscaled") and d_k in cell.alike_d_ks
            ahead = variant in ("additive", "unscaled", "scaled") and d_k == max(cell.d_ks)
            for phase, seconds in (("selection", sel), ("whole curves", whole),
                                   ("confirmation", confirmation(c, FIRST_SEEDS)),
                                   ("stage 2", top_up * alike), ("stage 2 bound", top_up * (alike or ahead))):
                sums[phase] += seconds
    return {phase: seconds * OVERHEAD / 3600 for phase, seconds in sums.items()}


PHASES = ("selection", "whole curves", "confirmation", "stage 2")


def plan(summary: pd.DataFrame, reuse: bool = True) -> pd.DataFrame:
    """One row per cell: each phase's hours and the cell's total (stage 2 as projected; its
    bound beside it, not summed)."""
    jobs = committed_jobs(summary)
    table = pd.DataFrame([{"cell": c.name, **cell_hours(jobs, c, reuse)} for c in CELLS]).set_index("cell")
    table["total"] = table[list(PHASES)].sum(axis=1)
    return table


def total_hours(table: pd.DataFrame, stage_2: str = "stage 2") -> float:
    """The whole study: the cells (stage 2 as named), the text cell and the extras."""
    cells = table["total"].sum() - table["stage 2"].sum() + table[stage_2].sum()
    return float(cells) + TEXT_HOURS + sum(EXTRAS_HOURS.values())


def main(root: str = "results/reference") -> None:
    summary = pd.read_parquet(Path(root) / "summary.parquet")
    table = plan(summary)
    pd.set_option("display.width", 120)
    print(f"hours, commands' overhead (x{OVERHEAD}) included\n")
    print(table.round(2).to_string())
    print(f"\n{'text cell (adam_charlm)':<45}{TEXT_HOURS:.2f}")
    for what, h in EXTRAS_HOURS.items():
        print(f"{what:<45}{h:.2f}")
    print(f"\ntotal {total_hours(table):.2f} h (stage 2 at its bound: {total_hours(table, 'stage 2 bound'):.2f} h) "
          f"against {BUDGET_HOURS:.0f} h")
    print(f"no selection run reused: {total_hours(plan(summary, reuse=False)):.2f} h")


if __name__ == "__main__":
    main(*sys.argv[1:])
