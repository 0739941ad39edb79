"""The law over cells: log2 c*_abs = a + gamma log2 d_k + b log2 ln n, where c*_abs = c* / sqrt(d_k) is
the multiplier of q.k itself (the paper's law: gamma = -1/2, b = 0; muP's: gamma = -1; the log n
laws: b = 1). Least squares; its interval from the same bootstrap draws as the cells' c*."""
from __future__ import annotations

import numpy as np

TERMS = ("a", "gamma", "b")


def design(d_k: np.ndarray, n_keys: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones(len(d_k)), np.log2(d_k), np.log2(np.log(n_keys))])


def absolute(log2_c_rel: np.ndarray, d_k: np.ndarray) -> np.ndarray:
    """log2 of the multiplier on q.k: c / sqrt(d_k)."""
    return log2_c_rel - 0.5 * np.log2(d_k)


def fit(log2_c_abs: np.ndarray, d_k: np.ndarray, n_keys: np.ndarray) -> np.ndarray:
    """(a, gamma, b) by least squares; NaN where the cells cannot separate the terms."""
    x = design(np.asarray(d_k, float), np.asarray(n_keys, float))
    if np.linalg.matrix_rank(x) < x.shape[1]:
        return np.full(3, np.nan)
    return np.linalg.lstsq(x, log2_c_abs, rcond=None)[0]


def consistent(lo: float, hi: float, value: float, slack: float = 1e-9) -> bool:
    """value inside [lo, hi] (a point interval of a noiseless fit holds its own value)."""
    return bool(lo - slack <= value <= hi + slack)
