"""One way to check a value, one place to register a schema."""
from __future__ import annotations

from pathlib import Path

import pytest

from attention.checks import check, is_int
from attention.registry import option_error
from experiments.tasks import common

SRC = Path(__file__).resolve().parents[1] / "src"


def test_check_raises_the_one_line():
    check(True, "d_k", "must be >= 1", 0)
    with pytest.raises(ValueError, match=r"^d_k: must be >= 1, got 0$"):
        check(False, "d_k", "must be >= 1", 0)
    with pytest.raises(ValueError, match=r"^init: must be one of a, b, got 'c'$"):
        check(False, "init", "must be one of a, b", "c")

    class OwnError(ValueError):
        pass

    with pytest.raises(OwnError, match=r"^x: must be > 0, got 0$"):
        check(False, "x", "must be > 0", 0, error=OwnError)


def test_every_layer_names_its_keys_through_it():
    with pytest.raises(ValueError, match=r"^attention\.multiplier: must be > 0, got -1$"):
        option_error(False, "multiplier", "must be > 0", -1)
    with pytest.raises(ValueError, match=r"^task\.n_pairs: must be >= 1, got 0$"):
        common.check(False, "n_pairs", "must be >= 1", 0)
    with pytest.raises(ValueError, match=r"^seed: must be in \[0, \d+\], got -1$"):
        common.check_seed("seed", -1)


def test_is_int_refuses_bools_and_floats():
    assert is_int(3) and not is_int(True) and not is_int(3.0)


def test_the_error_line_is_written_once():
    writers = [p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py")
               if '{allowed}, got {value!r}' in p.read_text()]
    assert writers == ["attention/checks.py"]


def test_schemas_are_registered_in_app_config():
    # the analysis commands (plot, report, dashboard) register their own: their schema's
    # defaults come from the verdicts, which the other commands need not import
    stores = sorted(p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py") if "ConfigStore" in p.read_text())
    assert stores == ["experiments/app/analysis_schema.py", "experiments/app/config.py"]
