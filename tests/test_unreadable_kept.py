"""Nothing unreadable is deleted: a finished run whose files cannot be read is moved whole out of
runs/ before it is trained again; the line says where, and collect counts the run once."""
from __future__ import annotations

import shutil

import pytest
from test_data_safety import compose_train

from experiments import collect, train
from experiments.store import claim


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("trained") / "res"
    [summary] = train.run(compose_train(f"results_dir={out}"))
    return out, summary["run_id"]


@pytest.mark.parametrize("damage", ["summary.json", "history.parquet"])
def test_unreadable_run_is_kept_aside_and_trained_again(trained, tmp_path, capsys, damage):
    root = tmp_path / "res"
    shutil.copytree(trained[0], root)
    rid = trained[1]
    folder = root / "runs" / rid
    (folder / damage).write_bytes(b"\xff\xfe not what it should be")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    capsys.readouterr()
    [again] = train.run(compose_train(f"results_dir={root}"))
    assert again["status"] == "completed"
    [kept] = (root / claim.UNREADABLE).iterdir()
    assert kept.name.startswith(f"{rid}-")
    assert {p.name: p.read_bytes() for p in kept.iterdir()} == before  # intact, every file
    [line] = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith(f"retrain {rid}")]
    assert str(kept) in line
    summary, history, incomplete = collect.collect_runs(root)
    assert not incomplete and summary.run_id.tolist() == [rid] and set(history.run_id) == {rid}


def test_a_second_setting_aside_keeps_both(tmp_path, monkeypatch):
    monkeypatch.setattr(claim.time, "strftime", lambda *_: "20260101T000000Z")  # the same second
    folders = [tmp_path / "runs" / f"r{i}" for i in range(2)]
    kept = []
    for i, folder in enumerate(folders):
        folder.mkdir(parents=True)
        (folder / "summary.json").write_text(f"{i}\n")
        kept.append(claim.set_aside(folder, tmp_path, "same-run"))
    assert kept[0] != kept[1] and [(k / "summary.json").read_text() for k in kept] == ["0\n", "1\n"]
    assert not any(f.exists() for f in folders)
