"""`make run`'s plan: its own report must be able to judge every init-time sub-claim."""

from __future__ import annotations

from omegaconf import OmegaConf

from experiments.analysis.stats.intervals import MIN_SEEDS
from experiments.app.pipeline import steps


def test_the_probe_runs_enough_seeds_for_a_verdict():
    (probe,) = [cmd for _, cmd in steps("results", []) if cmd[0] == "experiments.probe"]
    cfg = OmegaConf.from_dotlist([arg for arg in probe[1:] if "=" in arg])
    assert len(set(cfg.seeds)) >= max(3, MIN_SEEDS)
