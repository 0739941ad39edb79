"""task.n_keys: the number of keys a query attends over, one name in every task (the contract of the
temperature study's n axis), and a summary column; on the recall tasks it is n_pairs."""
from __future__ import annotations

import jax
import pytest
from omegaconf import OmegaConf

from experiments.store.results import identity
from experiments.tasks import TASKS
from experiments.tasks.common import recorded_yardsticks

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.mark.parametrize("name", ["assoc_recall", "mqar"])
def test_n_keys_is_n_pairs_with_one_run_id(name):
    spec = TASKS[name]
    by_keys = spec.config_cls(n_keys=4)
    by_pairs = spec.config_cls(n_pairs=4)
    assert spec.n_keys(by_keys) == spec.n_keys(by_pairs) == 4
    a, b = (spec.make_batch(c, jax.random.PRNGKey(0), 2)["tokens"] for c in (by_keys, by_pairs))
    assert (a == b).all()
    fields = lambda c: {"task": {k: getattr(c, k) for k in c.__dataclass_fields__}}
    assert identity(OmegaConf.create(fields(by_keys))) == identity(OmegaConf.create(fields(by_pairs)))
    assert identity(OmegaConf.create(fields(spec.config_cls(n_keys=5)))) != identity(OmegaConf.create(fields(by_pairs)))


def test_every_task_records_its_n_keys():
    got = {name: recorded_yardsticks(spec, spec.config_cls())["n_keys"] for name, spec in TASKS.items()
           if name != "charlm"}
    assert got == {"assoc_recall": 16, "mqar": 8, "vector_retrieval": 64}
    assert TASKS["charlm"].n_keys(TASKS["charlm"].config_cls()) == 64  # the window


def test_too_many_keys_names_task_n_keys():
    with pytest.raises(ValueError, match=r"task\.n_keys: must be <= vocab_size//2 - 1 = 31"):
        TASKS["assoc_recall"].validate(TASKS["assoc_recall"].config_cls(n_keys=40))


def test_charlm_n_keys_is_its_window_with_one_run_id():
    """On text the keys a query attends over are its window: task.n_keys=32 is task.seq_len=32 (the
    same batches, the same run id), and a bad value is refused under its own name."""
    spec = TASKS["charlm"]
    by_keys, by_len = spec.config_cls(n_keys=32, min_context=20), spec.config_cls(seq_len=32, min_context=20)
    assert spec.n_keys(by_keys) == spec.seq_len(by_keys) == 32
    a, b = (spec.make_batch(c, jax.random.PRNGKey(0), 2)["tokens"] for c in (by_keys, by_len))
    assert a.shape == (2, 32) and (a == b).all()
    fields = lambda c: {"task": {k: getattr(c, k) for k in c.__dataclass_fields__}}
    assert identity(OmegaConf.create(fields(by_keys))) == identity(OmegaConf.create(fields(by_len)))
    with pytest.raises(ValueError, match=r"n_keys: must be an integer >= 2"):
        spec.validate(spec.config_cls(n_keys=1))
    with pytest.raises(ValueError, match=r"min_context: must be < n_keys = 16"):
        spec.validate(spec.config_cls(n_keys=16))
