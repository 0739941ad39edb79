"""Wall time of one cell trained with train.prune on and off, job by job, alternating.

    PYTHONPATH=src python scripts/prune_ab.py [cell] [results root] [jobs]
    (defaults adam_mqar, the repository's results/prune_ab, every job;
    jobs: e.g. additive-dk512,scaled-dk1024)

Each job of `experiment=quality cell=<cell>` (one (d_k, variant): all its rates x seeds as lanes)
is trained twice in one process each, into <root>/on and <root>/off, the arm that goes first
alternating from job to job, so slow drift of a shared machine falls on both arms alike. The
compile cache is off in both (each job compiles cold, as on a fresh machine), no logger runs,
and a job interrupted half way is retrained whole (overwrite=true).
Every finished (job, arm) is appended to <root>/walls.tsv; a rerun skips those, so an A/B
stopped half way resumes where it stopped. The root is local scratch (results/ is not
committed): a finished A/B's rows go into docs/PERFORMANCE.md's table, its build and setting
into the commit message. While <root>/PAUSE exists no job starts (run other heavy work then).
The last line printed is the ratio on/off over the jobs both arms finished.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time
from pathlib import Path

from omegaconf import OmegaConf

REPO = Path(__file__).resolve().parents[1]
PRESET = REPO / "conf" / "experiment" / "quality.yaml"
ROOT = REPO / "results" / "prune_ab"  # the default root, wherever the script is started from
FIELDS = ("job", "arm", "wall_s", "rc", "started", "load1")


def jobs() -> list[tuple[int, str]]:
    """experiment=quality's (d_k, variant) jobs of one cell, in its sweep's order (cheapest d_k first)."""
    sweep = OmegaConf.load(PRESET).hydra.sweeper.params
    return [(int(d_k), v) for d_k in str(sweep.d_k).split(",") for v in str(sweep.attention).split(",")]


def done(walls: Path) -> dict[tuple[str, str], float]:
    if not walls.exists():
        return {}
    with walls.open() as f:
        return {(r["job"], r["arm"]): float(r["wall_s"]) for r in csv.DictReader(f, delimiter="\t")
                if r["rc"] == "0"}


def ratio(walls: dict[tuple[str, str], float]) -> tuple[float, int]:
    """Sum of the on arm's walls over the off arm's, over the jobs both arms finished."""
    both = [j for j, arm in walls if arm == "on" and (j, "off") in walls]
    off = sum(walls[(j, "off")] for j in both)
    return (sum(walls[(j, "on")] for j in both) / off if off else float("nan")), len(both)


def train(cell: str, d_k: int, variant: str, arm: str, root: Path) -> tuple[float, int]:
    cmd = [sys.executable, "-m", "experiments.train", "experiment=quality", f"cell={cell}",
           f"d_k={d_k}", f"attention={variant}", f"train.prune.enabled={arm == 'on'}",
           "runtime.compile_cache=false", "logger=none", "progress=false", "overwrite=true",
           f"results_dir={root / arm}", f"hydra.run.dir={root / arm / 'hydra' / f'{variant}-{d_k}'}"]
    start = time.perf_counter()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode
    return time.perf_counter() - start, rc


def main(cell: str = "adam_mqar", root: str = str(ROOT), only: str = "") -> None:
    root_path = Path(root)
    wanted = set(filter(None, only.split(",")))
    names = [f"{variant}-dk{d_k}" for d_k, variant in jobs()]
    if wanted - set(names):  # a misspelt job would otherwise run nothing and say nothing
        sys.exit(f"jobs: unknown {', '.join(sorted(wanted - set(names)))}; allowed: {', '.join(names)}")
    root_path.mkdir(parents=True, exist_ok=True)
    walls = root_path / "walls.tsv"
    finished = done(walls)
    for i, ((d_k, variant), job) in enumerate(zip(jobs(), names)):
        if wanted and job not in wanted:
            continue  # a subset keeps each job's arm order, so runs of parts compose into the whole
        for arm in (("on", "off") if i % 2 == 0 else ("off", "on")):
            if (job, arm) in finished:
                continue
            while (root_path / "PAUSE").exists():
                time.sleep(10)
            started, load1 = time.strftime("%Y-%m-%dT%H:%M:%S"), os.getloadavg()[0]
            wall, rc = train(cell, d_k, variant, arm, root_path)
            new = not walls.exists()
            with walls.open("a") as f:
                if new:
                    f.write("\t".join(FIELDS) + "\n")
                f.write(f"{job}\t{arm}\t{wall:.1f}\t{rc}\t{started}\t{load1:.2f}\n")
            if rc == 0:
                finished[(job, arm)] = wall
            print(f"{job} {arm}: {wall:.1f} s (rc {rc}, load {load1:.2f})", flush=True)
    r, n = ratio(finished)
    print(f"pruning on / off wall time over {n} jobs: {r:.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
