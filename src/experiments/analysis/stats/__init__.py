"""Statistics over seeds: t-intervals, per-seed slopes, power, Kaplan-Meier; pure numpy and scipy.

`mean_ci` and `paired_diff_ci` are a contract (docs/ARCHITECTURE.md): importable from here,
whichever module of this package holds them."""
from .intervals import mean_ci, paired_diff_ci

__all__ = ["mean_ci", "paired_diff_ci"]
