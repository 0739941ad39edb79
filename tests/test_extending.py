"""docs/EXTENDING.md, done as written: a toy variant and a toy task, each one
module plus one yaml in a temporary copy of the project (nothing else edited),
trained, probed, collected and reported from the command line."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]

# docs/EXTENDING.md, "Add a variant": a learned temperature on the scaled dot product
TOY_VARIANT = '''
import jax.numpy as jnp

from attention.dot import dot
from attention.registry import Variant, option_error, register


def init_toy(rng, d_k: int, init_temp: float = 1.0):
    return {"log_temp": jnp.log(jnp.asarray(init_temp, jnp.float32))}


def _toy(params, q, k, key_count=None):
    temp = jnp.exp(params["log_temp"]).astype(q.dtype)
    return temp * dot(q, k) / jnp.sqrt(jnp.asarray(q.shape[-1], q.dtype))


register(Variant("toy_temp", init_toy, _toy, doc="exp(t) q.k / sqrt(d_k), t learned",
                 init_options=("init_temp",),
                 check=lambda o: option_error(o["init_temp"] > 0, "init_temp", "must be > 0",
                                              o["init_temp"])))
'''
TOY_VARIANT_YAML = '''defaults:
  - /schema_attention_toy_temp@_here_
  - _self_

name: toy_temp
init_temp: 1.0
'''
# docs/EXTENDING.md, "Add a task": copy the token that followed the query's earlier occurrence
TOY_TASK = '''
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from .common import TaskSpec, check_int, jit_per_config


@dataclass
class ToyCopyConfig:
    name: str = "toy_copy"
    vocab_size: int = 16
    seq_len: int = 8


def make_batch(cfg, rng, batch_size):
    t = cfg.seq_len
    tokens = jax.random.randint(rng, (batch_size, t), 1, cfg.vocab_size)
    tokens = tokens.at[:, -1].set(tokens[:, 0])  # the last token repeats the first
    targets = jnp.zeros((batch_size, t), jnp.int32).at[:, -1].set(tokens[:, 1] - 1)
    loss_mask = jnp.zeros((batch_size, t), jnp.float32).at[:, -1].set(1.0)
    return {"tokens": tokens.astype(jnp.int32), "vectors": jnp.zeros((batch_size, t, 0), jnp.float32),
            "targets": targets, "loss_mask": loss_mask}


def validate(cfg):
    check_int(cfg, "vocab_size", 3)
    check_int(cfg, "seq_len", 3)


SPEC = TaskSpec("toy_copy", ToyCopyConfig, jit_per_config(make_batch), input_vocab=lambda c: c.vocab_size,
                n_classes=lambda c: c.vocab_size - 1, seq_len=lambda c: c.seq_len,
                d_in=lambda c: 0, validate=validate)
'''
TOY_TASK_YAML = '''defaults:
  - /schema_task_toy_copy@_here_
  - _self_

name: toy_copy
vocab_size: 16
seq_len: 8
'''
TINY = ["d_k=8", "train.steps=4", "train.eval_every=2", "train.n_val=16", "train.n_test=16",
        "train.batch_size=8", "logger=none", "progress=false"]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A copy of src/ and conf/ with the toy variant and task added, the documented way."""
    root = tmp_path_factory.mktemp("project")
    for part in ("src", "conf"):
        shutil.copytree(ROOT / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "src/attention/toy_temp.py").write_text(TOY_VARIANT)
    (root / "conf/attention/toy_temp.yaml").write_text(TOY_VARIANT_YAML)
    (root / "src/experiments/tasks/toy_copy.py").write_text(TOY_TASK)
    (root / "conf/task/toy_copy.yaml").write_text(TOY_TASK_YAML)
    env = {**os.environ, "PYTHONPATH": str(root / "src"), "WANDB_MODE": "disabled",
           "JAX_COMPILATION_CACHE_DIR": str(tmp_path_factory.mktemp("jax_cache"))}

    def cli(module, *args, ok=True):
        proc = subprocess.run([sys.executable, "-m", module, *args], cwd=root, env=env,
                              capture_output=True, text=True, timeout=300)
        assert (proc.returncode == 0) is ok, proc.stderr[-3000:]
        return proc

    return root, cli


def test_toy_variant_and_task_train_probe_collect_report(project):
    root, cli = project
    results = root / "results"
    cli("experiments.train", "-m", "attention=toy_temp,scaled", "task=toy_copy", *TINY,
        f"results_dir={results}")
    cli("experiments.probe", "variants=[toy_temp,scaled,sigmoid]", "d_ks=[4,8]", "n_rows=64",
        "queries_per_batch=32", "theory_rows=256", "n_keys=8", "progress=false",
        f"results_dir={results}")
    cli("experiments.collect", f"results_dir={results}")
    summary = pd.read_parquet(results / "summary.parquet")
    assert set(summary["attention"]) == {"toy_temp", "scaled"}
    assert set(summary["task"]) == {"toy_copy"}
    assert (summary["status"] == "completed").all()
    probe = pd.read_parquet(results / "probe.parquet")
    assert {"toy_temp", "sigmoid"} <= set(probe["attention"])
    cli("experiments.report", f"results_dir={results}")
    assert "toy_temp" in (results / "REPORT.md").read_text()


def test_toy_variant_option_typo_fails_naming_the_key(project):
    _, cli = project
    proc = cli("experiments.train", "attention=toy_temp", "attention.init_tmp=2", *TINY, ok=False)
    assert proc.returncode == 2 and "init_tmp" in proc.stderr and "Traceback" not in proc.stderr
    proc = cli("experiments.train", "attention=toy_temp", "attention.init_temp=-1", *TINY, ok=False)
    assert proc.returncode == 2 and "attention.init_temp" in proc.stderr
