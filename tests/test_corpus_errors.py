"""task.corpus_dir and the charlm window, as a user types them: each mistake ends the
pre-flight in one line naming the key, exit 2, no traceback, nothing written.

Every case runs the command itself (python -m experiments.train ...): the pre-flight
alone, a few seconds each. A case whose corpus would train (the old reader took it)
also sets a seq_len no split can hold, so that the old code fails fast on the wrong key
instead of training."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from experiments.tasks import plays

PLAY = "**SPEAKER**  \n" + "abc abd abe bca bcd cab " * 40 + "\n"
TOO_LONG = "task.seq_len=100000"  # longer than any split here: the old code stops at seq_len


def _corpus(root, names=("a", "b", "c", "d"), sub: str = ""):
    folder = root / sub if sub else root
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / f"{name}.md").write_text(PLAY, encoding="utf-8")
    return root


def _folders(tmp_path):
    """{case: corpus_dir as typed}: one folder per mistake."""
    made = {}
    bad = _corpus(tmp_path / "latin1")
    (bad / "a.md").write_bytes(b"**S**\nab\xa3cd\n")  # a pound sign in Latin-1: line 2
    made["not_utf8"] = str(bad)
    made["missing"] = str(tmp_path / "no-such-folder")
    (tmp_path / "a-file.md").write_text(PLAY)
    made["a_file"] = str(tmp_path / "a-file.md")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("no plays here\n")
    made["no_plays"] = str(tmp_path / "notes")
    made["two_plays"] = str(_corpus(tmp_path / "two", ("b", "c")))  # val and test: none to train on
    dup = _corpus(tmp_path / "dup", ("b", "c"))
    _corpus(dup, ("a",), "comedies")
    _corpus(dup, ("a",), "tragedies")
    made["same_name_twice"] = str(dup)
    short = _corpus(tmp_path / "short")
    (short / "b.md").write_text("**S**  \nhi\n")  # the val play: shorter than any window
    made["short_val_play"] = str(short)
    lock = _corpus(tmp_path / "locked")
    os.symlink(tmp_path / "gone", lock / ".#d.md")  # an editor's lock: a link to nothing
    made["hidden_lock_file"] = str(lock)
    made["good"] = str(_corpus(tmp_path / "good"))
    return made


# (case, extra overrides, key the line names, words it must hold)
CASES = [
    ("not_utf8", [], "task.corpus_dir", ["a.md is not UTF-8 text", "byte 0xa3 at position 8, line 2"]),
    ("missing", [], "task.corpus_dir", ["no such folder", "<play>.md"]),
    ("a_file", [], "task.corpus_dir", ["is a file, not a folder", "<play>.md"]),
    ("no_plays", [], "task.corpus_dir", ["holds no <play>.md files"]),
    ("empty", [], "task.corpus_dir", ["must be null (the shipped plays) or a folder", "got ''"]),
    ("empty_unquoted", [], "task.corpus_dir", ["must be null (the shipped plays) or a folder", "got ''"]),
    ("blank", [], "task.corpus_dir", ["must be null (the shipped plays) or a folder", "got ' '"]),
    ("two_plays", [], "task.corpus_dir", ["holds 2 plays (b, c)", "at least 3"]),
    ("same_name_twice", [TOO_LONG], "task.corpus_dir", ["play 'a' is in two files", "comedies", "tragedies"]),
    ("short_val_play", [], "task.val_plays", ["the val plays (b) hold 6 characters", "too few for one window"]),
    # a hidden file is no play (the old reader read the lock and failed, exit 1): seq_len is the mistake
    ("hidden_lock_file", [TOO_LONG], "task.seq_len", ["the length of the shortest split"]),
    ("good", ["task.seq_len=8", "task.min_context=24"], "task.min_context", ["must be < seq_len = 8"]),
]
# what the shell hands over for "task.corpus_dir=''", task.corpus_dir='' and "task.corpus_dir=' '"
TYPED = {"empty": "''", "empty_unquoted": "", "blank": "' '"}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return _folders(tmp_path_factory.mktemp("corpora"))


SUBPROCESS_CASES = ("not_utf8", "missing", "empty")


def _preflight(argv: list[str], cwd, capsys, monkeypatch) -> tuple[int, str, str]:
    """(exit code, stderr, stdout) of experiments.train's pre-flight on `argv`, in this process."""
    from experiments.app import config, preflight, ranges

    monkeypatch.chdir(cwd)
    capsys.readouterr()
    try:
        preflight.check_command_line("train", argv, config.validate, ranges.validate_jobs)
        code = 0
    except SystemExit as done:
        code = done.code
    out, err = capsys.readouterr()
    return code, err, out


@pytest.mark.parametrize("case,extra,key,words", CASES, ids=[c[0] for c in CASES])
def test_a_corpus_mistake_is_one_line_naming_the_key(folders, tmp_path, case, extra, key, words, capsys,
                                                     monkeypatch):
    corpus_dir = TYPED[case] if case in TYPED else folders[case]
    cwd, results = tmp_path / "cwd", tmp_path / "results"
    cwd.mkdir()
    argv = [sys.executable, "-m", "experiments.train", "task=charlm", f"task.corpus_dir={corpus_dir}",
            "task.val_plays=[b]", "task.test_plays=[c]", "task.seq_len=12", "task.n_queries=4",
            "task.min_context=8", *extra, "logger=none", f"results_dir={results}"]
    if case in SUBPROCESS_CASES:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)
        code, err, out = done.returncode, done.stderr, done.stdout
    else:  # the pre-flight the command runs, in this process: the subprocess cases show its line reaches the user
        code, err, out = _preflight(argv[3:], cwd, capsys, monkeypatch)
    lines = err.splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith(f"error: {key}: "), err
    assert "Traceback" not in err + out
    assert all(w in lines[0] for w in words), lines[0]
    assert "= -" not in lines[0]  # no bound below zero
    assert not (results / "runs").exists() and not (results.exists() and any(results.iterdir()))
    assert not any(cwd.iterdir())  # nor Hydra's outputs/ where the command started


def test_a_corpus_of_many_characters_encodes():
    """More distinct characters than uint8 holds (a CJK play): ids widen, nothing overflows."""
    wide = "".join(chr(0x4E00 + i) for i in range(300))
    c = plays.build_corpus({"a": wide, "b": wide[:50], "c": wide[::-1]}, ("b",), ("c",))
    assert len(c.vocab) == 301 and c.decode(c.ids["train"]) == wide
    assert c.decode(c.ids["test"]) == wide[::-1] and int(np.max(c.ids["train"])) == 300


def test_the_shipped_plays_are_kept_uint8():
    c = plays.build_corpus({"a": "abc", "b": "ab", "c": "ca"}, ("b",), ("c",))
    assert c.ids["train"].dtype == np.uint8
