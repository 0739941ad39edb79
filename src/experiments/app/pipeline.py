"""The main job (`make run`): every instrument once, then the analysis.

  1. the init-time probe against theory (iid inputs, 3 seeds: enough for an interval,
     so the report judges sub-claims 1-3b; fewer rows and theory rows per seed than the
     probe's defaults, so that the three cost about what one seed at the defaults did)
  2. the quick cost benchmark (dot-product vs additive)
  3. experiment=quality_quick (4 variants x 3 d_k x 3 learning rates x 4 seeds,
     each variant at its best rate on validation)
  4. collect, plots, the claim report, the dashboard

Each step is the same command a user would type, run as a child process, so
that each gets a fresh Hydra and a clean exit code. Finished runs are
skipped, so an interrupted main job resumes where it stopped.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from experiments.app import progress


PROBE_SEEDS = ["seeds=[0,1,2]", "n_rows=1280", "theory_rows=8192"]  # 3 x 1280 rows < one seed at the default 4096


def steps(results_dir: str, extra: list[str]) -> list[tuple[str, list[str]]]:
    r = f"results_dir={results_dir}"
    return [
        ("probe (iid inputs, 3 seeds)", ["experiments.probe", "input_model=iid", *PROBE_SEEDS, r]),
        ("cost benchmark (quick)", ["experiments.cost", "quick=true", r]),
        ("sweep experiment=quality_quick",
         ["experiments.train", "-m", "experiment=quality_quick", r, *extra]),
        ("collect", ["experiments.collect", r]),
        ("plots", ["experiments.plot", r]),
        ("report", ["experiments.report", r]),
        ("dashboard", ["experiments.dashboard", r]),
    ]


def where_to_look(results_dir: str) -> str:
    root = Path(results_dir)
    return "\n".join([
        "",
        *([f"  answer:     {root / 'ANSWER.md'} (the short answer, from the clause table)"]
          if (root / "ANSWER.md").is_file() else []),
        f"  report:     {root / 'REPORT.md'}",
        f"  dashboard:  {root / 'dashboard.html'} (open it in a browser; works from file://)",
        f"  figures:    {root / 'figures'}/",
        f"  tables:     {root / 'summary.parquet'}, {root / 'history.parquet'}, "
        f"{root / 'probe.parquet'}, {root / 'cost.parquet'}, {root / 'clauses.csv'} (every verdict's clauses)",
        f"  W&B:        offline runs in {root / 'wandb'}/; upload with "
        f"`wandb sync {root / 'wandb'}/offline-run-*`, or rerun with logger.mode=online",
    ])


def _parse(argv: list[str]) -> tuple[str, list[str]]:
    results_dir, extra = "results", []
    for arg in argv:
        if arg.startswith("results_dir="):
            results_dir = arg.split("=", 1)[1]
            if not results_dir:
                progress.say("error: results_dir: must be a non-empty path")
                raise SystemExit(2)
        else:
            extra.append(arg)  # passed on to the sweep, e.g. logger=none
    return results_dir, extra


def main(argv: list[str] | None = None) -> int:
    results_dir, extra = _parse(sys.argv[1:] if argv is None else argv)
    plan = steps(results_dir, extra)
    start = time.perf_counter()
    for i, (name, command) in enumerate(plan, 1):
        progress.say(f"[{i}/{len(plan)}] {name}: python -m {' '.join(command)}")
        t0 = time.perf_counter()
        code = subprocess.call([sys.executable, "-m", *command])
        if code != 0:
            progress.say(f"main job stopped: step '{name}' exited with {code}")
            return code
        progress.say(f"[{i}/{len(plan)}] {name}: done in {time.perf_counter() - t0:.0f} s")
    progress.say(f"main job done in {time.perf_counter() - start:.0f} s. Where to look:"
                 + where_to_look(results_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
