"""Init-time probe: attention statistics of every variant and d_k, against theory.

    python -m experiments.probe n_keys=64 input_model=iid results_dir=results
    python -m experiments.probe input_model=model init=lecun_normal d_ks=[16,64,256]

For every variant and d_k it draws `n_rows` attention rows (one query over
`n_keys` keys each) and measures, at initialisation, the statistics of
`attention.stats.row_summary` plus the gradient norms reaching q and k, and
writes them beside `theory_<stat>` columns from `experiments.instruments.theory` (plain
numpy, never the attention code) to ${results_dir}/probe.parquet.

Input models:
  iid:   q, k components i.i.d. N(0, 1) (the paper's assumption); init = "none";
         grad_norm_q / grad_norm_k are gradient norms w.r.t. q and k.
  model: q = x W_q, k = x' W_k, x ~ N(0, I_d_model), W [d_model, d_k] from
         experiments.training.inits for each init; grad_norm_q / grad_norm_k are norms
         of the gradient w.r.t. W_q and W_k.
  task:  the harness model's own layer (W_q, W_k for each init) on the task
         `task`'s validation examples, rows at loss positions, causal keys:
         see experiments.instruments.probe_task (n_keys = mean key count per row).
  both = iid + model; all = iid + model + task.

Rows come in batches of `queries_per_batch` (B) independent queries that
share one draw of n_keys keys and values ([n_rows / B, B, n_keys] logits):
each row's law is that of a row with its own keys, and keys cost B times
less to draw and to push through the variants.

The fixed random downstream loss: batch b has values v ~ N(0, 1) [n_keys, d_v]
and each row i a fixed direction r_i ~ N(0, I / d_v) [d_v]; the row's loss is
l_i = <out_i, r_i>, so dl_i/dlogits_i = J_i u_i with u_ij = <v_j, r_i> ~ N(0, 1):
the gradient reaching the logits has the size of the softmax Jacobian.
grad_norm_q = sqrt(mean_b |dL_b / dW_q|^2) for the batch loss
L_b = sum_{i in b} l_i / sqrt(B) (jax.grad; w.r.t. q itself for iid input),
likewise grad_norm_k. Since r is independent and mean-free, the cross terms
between rows vanish in expectation: this is the root mean square of the
per-row gradient norm |dl_i / dW_q| (exactly so for q itself), free of B and
n_rows.

Per row, grad_qk_row_median and grad_qk_row_rms aggregate g_i = |dl_i/d(q, K)|
(iid input: w.r.t. the row's query and its batch's keys) or |dl_i/d(W_q, W_k)|
(model input) over all rows, by the median and by the root mean square;
`grad_wrt` ("q,k" or "W_q,W_k") says which. The two differ where rows do:
the median is a typical row, the RMS is carried by the largest gradients.
The task input writes NaN there (its rows are not differentiated one by one).

Randomness (numpy, seeded): x, v and r are shared by all d_k, inits and
variants; iid q, k by all variants at one d_k; W by all variants: the
variants are compared on the same draws. Deterministic for a seed.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from omegaconf import DictConfig

import attention
from attention.checks import check
from experiments.instruments import theory
from experiments.instruments.probe_task import measure_task
from experiments.tasks import TASKS
from experiments.tasks.common import SEED_MAX, check_seed
from experiments.training import memory
from experiments.training.inits import INITS, component_var, init_projection, query_init_factor

VARIANT_ORDER = tuple(attention.variant_names())  # every registered variant, the paper's three first
INPUT_MODELS = ("iid", "model", "task", "both", "all")
MODEL_SETS = {"both": ["iid", "model"], "all": ["iid", "model", "task"]}
CHUNK_ELEMENTS = 1 << 24  # largest [batches, B, n_keys, width] block at once (64 MB f32)
MEASURED = ("logit_var", "logit_std", "entropy", "entropy_norm", "saturation",
            "jacobian_norm_mean", "jacobian_norm_median", "grad_norm_q", "grad_norm_k")
PER_ROW = ("grad_qk_row_median", "grad_qk_row_rms")  # aggregates of the per-row gradient norm
GRAD_WRT = {"iid": "q,k", "model": "W_q,W_k", "task": "W_q,W_k"}
# fold_in tags separating the random streams of one seed
_ROWS, _PARAMS, _PROJ = 0x50524F, 0x504152, 0x57514B


@dataclass
class ProbeConfig:
    results_dir: str = "results"
    variants: list[str] = field(default_factory=lambda: list(VARIANT_ORDER))
    d_ks: list[int] = field(default_factory=lambda: [8, 16, 32, 64, 128, 256, 512, 1024])
    n_keys: int = 64
    n_rows: int = 4096
    input_model: str = "iid"   # iid | model | task | both (iid+model) | all (iid+model+task)
    task_name: str = "assoc_recall"  # task of the `task` input model (experiments.tasks.TASKS);
    # not `task`: that name is the training config group, which Hydra would claim
    init: str = "all"          # all | lecun_normal | xavier | torch_default
    d_model: int = 64          # input width of the projections (model input)
    d_v: int = 64              # value width of the downstream loss
    queries_per_batch: int = 64  # rows sharing one draw of keys and values
    theory_rows: int = 32768   # Monte Carlo rows per theory prediction
    seed: int = 0
    seeds: list[int] = field(default_factory=list)  # several seeds in one table; [] = [seed]
    progress: bool = True



def validate(cfg: DictConfig) -> None:
    """Range checks: ValueError('<key>: <what is allowed>, got <value>')."""
    valid = ", ".join(VARIANT_ORDER)
    check(len(cfg.variants) > 0, "variants", f"must name at least one of {valid}", list(cfg.variants))
    for name in cfg.variants:
        check(name in attention.VARIANTS, "variants", f"each must be one of {valid}", name)
    check(len(cfg.d_ks) > 0, "d_ks", "must hold at least one d_k", list(cfg.d_ks))
    for d_k in cfg.d_ks:
        check(d_k >= 2, "d_ks", "each must be >= 2", d_k)
    check(cfg.n_keys >= 2, "n_keys", "must be >= 2", cfg.n_keys)
    check(cfg.n_rows >= 2, "n_rows", "must be >= 2", cfg.n_rows)
    check(cfg.input_model in INPUT_MODELS, "input_model", f"must be one of {', '.join(INPUT_MODELS)}",
           cfg.input_model)
    check(cfg.task_name in TASKS, "task_name", f"must be one of {', '.join(TASKS)}", cfg.task_name)
    check(cfg.init == "all" or cfg.init in INITS, "init", f"must be all or one of {', '.join(INITS)}",
           cfg.init)
    check(cfg.queries_per_batch >= 1, "queries_per_batch", "must be >= 1", cfg.queries_per_batch)
    check(cfg.n_rows % cfg.queries_per_batch == 0, "n_rows",
           f"must be a multiple of queries_per_batch ({cfg.queries_per_batch})", cfg.n_rows)
    check(cfg.d_model >= 1, "d_model", "must be >= 1", cfg.d_model)
    check(cfg.d_v >= 1, "d_v", "must be >= 1", cfg.d_v)
    check(cfg.theory_rows >= 100, "theory_rows", "must be >= 100", cfg.theory_rows)
    check_seed("seed", cfg.seed)
    check(all(0 <= s <= SEED_MAX for s in cfg.seeds), "seeds", f"must all be in [0, {SEED_MAX}]",
           list(cfg.seeds))
    check(len(set(cfg.seeds)) == len(cfg.seeds), "seeds", "must not repeat a seed (each is one sample)",
           list(cfg.seeds))
    # every row is drawn at once (draw_rows), then measured with its logits, weights and gradients
    width = max(cfg.d_ks) + cfg.d_v + cfg.d_model + cfg.queries_per_batch
    need = 3 * 4 * (cfg.n_rows // cfg.queries_per_batch) * (cfg.n_keys + cfg.queries_per_batch) * width
    have, source = memory.available_bytes()
    key = "d_ks" if max(cfg.d_ks) > cfg.n_keys else "n_keys"  # the larger factor
    check(have is None or need <= have, key, f"the rows need about {need / 1e9:.1f} GB (estimated), "
           f"{source} allows {(have or 0) / 1e9:.1f} GB; lower n_keys, n_rows or d_ks", cfg[key])


# --- drawing rows ---------------------------------------------------------------

def draw_rows(cfg, d_k: int, model: bool) -> dict:
    """numpy draws for all rows, grouped in batches of `queries_per_batch` queries
    that share their n_keys keys and values:
    q [b, B, w], k [b, n, w] (w = d_model for model input (these are x), else d_k),
    v [b, n, d_v], r [b, B, d_v]."""
    n_b, B, n = cfg.n_rows // cfg.queries_per_batch, cfg.queries_per_batch, cfg.n_keys
    f32 = np.float32
    shared = np.random.default_rng([cfg.seed, _ROWS])        # v, r, x: same for every d_k
    v = shared.standard_normal((n_b, n, cfg.d_v), f32)
    r = shared.standard_normal((n_b, B, cfg.d_v), f32) / f32(math.sqrt(cfg.d_v))
    if model:
        q, k = (shared.standard_normal((n_b, m, cfg.d_model), f32) for m in (B, n))
    else:
        fresh = np.random.default_rng([cfg.seed, _ROWS, d_k])
        q, k = (fresh.standard_normal((n_b, m, d_k), f32) for m in (B, n))
    return {"q": q, "k": k, "v": v, "r": r}


def _params_key(seed: int, d_k: int):
    return jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(seed), _PARAMS), d_k)


def projections(cfg, d_k: int, inits: list[str]) -> dict:
    """{init: {"w_q", "w_k"}}, each [d_model, d_k], fixed per (seed, d_k, init)."""
    out = {}
    for init in inits:
        key = jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(cfg.seed), _PROJ), d_k)
        kq, kk = jax.random.split(jax.random.fold_in(key, INITS.index(init)))
        out[init] = {"w_q": init_projection(init, kq, cfg.d_model, d_k),
                     "w_k": init_projection(init, kk, cfg.d_model, d_k)}
    return out


# --- measuring one variant ----------------------------------------------------------

def _row_grad_sq(name: str, params, q, k, rows, model: bool):
    """|dl_i/d(q_i, K)|^2 for each row i of a batch (B,), or |dl_i/d(W_q, W_k)|^2 (model input)."""
    def row_loss(q_i, k, r_i):
        out, _ = attention.attend(name, params, q_i[None], k, rows["v"])
        return jnp.sum(out[0] * r_i)

    gq, gk = jax.vmap(jax.grad(row_loss, argnums=(0, 1)), in_axes=(0, None, 0))(q, k, rows["r"])
    if not model:  # (B, d_k), (B, n, d_k)
        return jnp.sum(gq * gq, -1) + jnp.sum(gk * gk, (-2, -1))
    # q_i = x_i W_q: dl_i/dW_q = x_i^T gq_i, an outer product of norm |x_i| |gq_i|;
    # K = X' W_k: dl_i/dW_k = X'^T gk_i
    gwk = jnp.einsum("nm,bnd->bmd", rows["k"], gk)  # (B, d_model, d_k)
    return jnp.sum(rows["q"] ** 2, -1) * jnp.sum(gq * gq, -1) + jnp.sum(gwk * gwk, (-2, -1))


@lru_cache(maxsize=None)
def _measure_fn(name: str, model: bool, chunk: int):
    """Jitted: (params, proj, rows) -> logits, weights [b, B, n], |grad q|^2, |grad k|^2 [b],
    per-row |grad|^2 [b, B].

    The gradient is taken of the batch loss L_b = sum_i <out_i, r_i> / sqrt(B)
    w.r.t. (q, k) (iid) or (W_q, W_k) (model), one batch at a time; the per-row
    one of each l_i alone."""
    def per_batch(params, proj, rows):
        def loss(wrt):
            if model:
                q, k = rows["q"] @ wrt["w_q"], rows["k"] @ wrt["w_k"]  # (B, d_k), (n, d_k)
            else:
                q, k = wrt["q"], wrt["k"]
            out, weights, logits = attention.attend_with_logits(name, params, q, k, rows["v"])
            return jnp.sum(out * rows["r"]) / math.sqrt(rows["r"].shape[0]), (logits, weights)

        wrt = proj if model else {"q": rows["q"], "k": rows["k"]}
        grads, (logits, weights) = jax.grad(loss, has_aux=True)(wrt)
        gq, gk = (grads["w_q"], grads["w_k"]) if model else (grads["q"], grads["k"])
        q, k = (rows["q"] @ proj["w_q"], rows["k"] @ proj["w_k"]) if model else (rows["q"], rows["k"])
        return logits, weights, jnp.sum(gq * gq), jnp.sum(gk * gk), _row_grad_sq(name, params, q, k, rows, model)

    def measure(params, proj, rows):
        # lax.map in chunks of batches bounds memory (additive's [B, n, d_hidden])
        return jax.lax.map(lambda b: per_batch(params, proj, b), rows, batch_size=chunk)

    return jax.jit(measure)


_summary = jax.jit(attention.stats.row_summary)


def at_query_init(name: str, d_k: int, proj: dict | None, rows: dict) -> tuple[dict | None, dict]:
    """(proj, rows) with the variant's own factor on W_q's init (training.inits.query_init_factor:
    unscaled_init's 1/sqrt(d_k)): on W_q for the model input, on the query itself for iid input
    (the query a W_q so drawn would give). Unchanged for every other variant."""
    factor = query_init_factor(name, d_k)
    if factor == 1.0:
        return proj, rows
    if proj is not None:
        return {init: {**w, "w_q": factor * w["w_q"]} for init, w in proj.items()}, rows
    return proj, {**rows, "q": factor * rows["q"]}


def measure_grid(cfg, d_k: int, proj: dict | None) -> dict:
    """{(variant, init): measured stats} at one d_k; proj {init: W's} or None (iid)."""
    model = proj is not None
    rows = {k: jnp.asarray(x) for k, x in draw_rows(cfg, d_k, model).items()}
    width = max(d_k, cfg.d_v, cfg.d_model if model else 0)
    chunk = max(1, min(rows["q"].shape[0],
                       CHUNK_ELEMENTS // (cfg.queries_per_batch * cfg.n_keys * width)))
    out = {}
    for name in cfg.variants:
        params = attention.init_params(name, _params_key(cfg.seed, d_k), d_k)
        own_proj, own_rows = at_query_init(name, d_k, proj, rows)
        for init in (proj if model else ["none"]):
            logits, weights, gq2, gk2, row_g2 = _measure_fn(name, model, chunk)(
                params, own_proj[init] if model else None, own_rows)
            stats = _summary(logits, weights)
            row = {c: float(stats[c]) for c in MEASURED[:7]}
            row["grad_norm_q"] = math.sqrt(float(jnp.mean(gq2)))
            row["grad_norm_k"] = math.sqrt(float(jnp.mean(gk2)))
            row_g2 = np.asarray(row_g2, np.float64).ravel()
            row["grad_qk_row_median"] = math.sqrt(float(np.median(row_g2)))
            row["grad_qk_row_rms"] = math.sqrt(float(row_g2.mean()))
            out[(name, init)] = row
    return out


# --- the whole grid ---------------------------------------------------------------

def probe(cfg, log=print) -> pd.DataFrame:
    """The probe table: one row per (input_model, init, d_k, variant)."""
    models = MODEL_SETS.get(cfg.input_model, [cfg.input_model])
    inits = list(INITS) if cfg.init == "all" else [cfg.init]
    rows = []
    for input_model in models:
        for d_k in cfg.d_ks:
            t0 = time.perf_counter()
            if input_model == "task":
                measured = measure_task(cfg, d_k, inits)
            else:
                measured = measure_grid(cfg, d_k, projections(cfg, d_k, inits)
                                        if input_model == "model" else None)
            projected = input_model != "iid"
            for (name, init), stats in measured.items():
                p = component_var(init, cfg.d_model, d_k)
                n_keys = stats.pop("n_keys", cfg.n_keys)  # task: mean key count per row
                rows.append({
                    "attention": name, "d_k": d_k, "n_keys": n_keys,
                    "input_model": input_model, "init": init,
                    "n_rows": stats.pop("n_rows", cfg.n_rows), "seed": cfg.seed,
                    "d_model": cfg.d_model if projected else None,
                    "task": cfg.task_name if input_model == "task" else None,
                    "grad_wrt": GRAD_WRT[input_model], **dict.fromkeys(PER_ROW, math.nan),
                    **stats,
                    **theory.predict(name, d_k, round(n_keys), p, cfg.theory_rows, cfg.seed,
                                     rank=cfg.d_model if projected else None),
                })
            log(f"probe {input_model:5s} d_k={d_k:<5d} {len(measured):2d} rows "
                f"{time.perf_counter() - t0:6.2f} s")
    frame = pd.DataFrame(rows)
    frame["d_model"] = frame["d_model"].astype("Int64")
    return frame
