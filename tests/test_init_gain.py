"""model.qk_init_gain: a factor on W_q's and W_k's init that moves the logits' spread at init by
gain^2 at a fixed d_k (the Britz control), leaving every run recorded before it with its id."""

from __future__ import annotations

import jax
import pytest
from omegaconf import OmegaConf

from test_config import compose_train

from experiments.store.results import run_id
from experiments.tasks import TASKS
from experiments.training.model import init_model
from experiments.training.spec import model_spec, task_object

pytestmark = pytest.mark.filterwarnings("ignore")


def _params(*overrides):
    cfg = compose_train("logger=none", "d_k=16", *overrides)
    spec = model_spec(cfg, task_object(dict(cfg.task)))
    return cfg, init_model(spec, jax.random.PRNGKey(0))["layers"][0]


def test_gain_scales_the_query_and_key_projections_alone():
    _, base = _params()
    _, twice = _params("model.qk_init_gain=2")
    for name in ("w_q", "w_k"):
        assert jax.numpy.allclose(twice[name], 2 * base[name])
    assert jax.numpy.array_equal(twice["w_v"], base["w_v"])


def _id(*overrides) -> str:
    cfg = _params(*overrides)[0]
    return run_id(OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"]))


def test_gain_one_keeps_the_run_id_and_another_changes_it():
    assert _id() == _id("model.qk_init_gain=1.0")
    assert _id() != _id("model.qk_init_gain=0.5")


def test_a_gain_it_cannot_take_names_the_key():
    from experiments.app import config
    cfg = compose_train("logger=none", "model.qk_init_gain=-1")
    with pytest.raises(Exception, match="model.qk_init_gain"):
        config.validate(cfg)
