"""scripts/prune_ab.py's bookkeeping: which (job, arm) pairs are done, and the on/off ratio."""

from __future__ import annotations

import importlib.util
import inspect
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "prune_ab.py"
spec = importlib.util.spec_from_file_location("prune_ab", SCRIPT)
prune_ab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(prune_ab)


def _walls(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "walls.tsv"
    path.write_text("\t".join(prune_ab.FIELDS) + "\n" + "".join(r + "\n" for r in rows))
    return path


def test_a_failed_job_is_not_done_and_the_ratio_reads_only_complete_pairs(tmp_path):
    walls = _walls(tmp_path, ["a\ton\t10.0\t0\tt\t0.1", "a\toff\t40.0\t0\tt\t0.1",
                              "b\ton\t5.0\t0\tt\t0.1", "b\toff\t99.0\t1\tt\t0.1"])
    done = prune_ab.done(walls)
    assert ("b", "off") not in done and ("b", "on") in done
    assert prune_ab.ratio(done) == (pytest.approx(0.25), 1)


def test_no_complete_pair_gives_no_ratio(tmp_path):
    r, n = prune_ab.ratio(prune_ab.done(_walls(tmp_path, ["a\ton\t10.0\t0\tt\t0.1"])))
    assert n == 0 and r != r  # nan


def test_the_jobs_are_the_presets_in_its_order():
    jobs = prune_ab.jobs()
    assert len(jobs) == len(set(jobs)) == 28 and jobs[0] == (2, "scaled") and jobs[-1] == (1024, "qk_norm")


def test_a_subset_of_jobs_keeps_each_jobs_arm_order_in_the_whole_sweep(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(prune_ab, "train", lambda cell, d_k, variant, arm, root: calls.append(
        (f"{variant}-dk{d_k}", arm)) or (1.0, 0))
    prune_ab.main("adam_mqar", str(tmp_path), "additive-dk512,scaled-dk1024")
    index = {f"{v}-dk{d}": i for i, (d, v) in enumerate(prune_ab.jobs())}
    assert sorted({job for job, _ in calls}) == ["additive-dk512", "scaled-dk1024"]
    for job in ("additive-dk512", "scaled-dk1024"):
        arms = [arm for j, arm in calls if j == job]
        assert arms == (["on", "off"] if index[job] % 2 == 0 else ["off", "on"])
    assert prune_ab.ratio(prune_ab.done(tmp_path / "walls.tsv")) == (1.0, 2)


def test_an_unknown_job_is_refused_in_one_line_before_anything_is_written(tmp_path):
    with pytest.raises(SystemExit, match=r"^jobs: unknown additive-dk5; allowed: scaled-dk2,"):
        prune_ab.main("adam_mqar", str(tmp_path / "ab"), "additive-dk5,scaled-dk2")
    assert not (tmp_path / "ab").exists()


def test_the_walls_go_to_local_scratch_wherever_the_script_starts(tmp_path, monkeypatch):
    """By default the rows land in the repository's results/prune_ab/walls.tsv, which git
    ignores (results/ is scratch): a finished A/B's rows go to docs/PERFORMANCE.md."""
    monkeypatch.chdir(tmp_path)
    default = inspect.signature(prune_ab.main).parameters["root"].default
    assert Path(default) == prune_ab.REPO / "results" / "prune_ab" and Path(default).is_absolute()
    ignored = subprocess.run(["git", "check-ignore", "-q", str(Path(default) / "walls.tsv")],
                             cwd=prune_ab.REPO)
    assert ignored.returncode == 0  # 1: tracked by git, 128: not a checkout
    monkeypatch.setattr(prune_ab, "train", lambda *a: (1.0, 0))
    root = tmp_path / "ab"
    prune_ab.main("adam_mqar", str(root), "scaled-dk2")
    assert [r.split("\t")[:4] for r in (root / "walls.tsv").read_text().splitlines()] == [
        list(prune_ab.FIELDS[:4]), ["scaled-dk2", "on", "1.0", "0"], ["scaled-dk2", "off", "1.0", "0"]]
    assert not (tmp_path / "results").exists()  # nothing beside the cwd
