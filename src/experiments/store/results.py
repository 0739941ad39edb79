"""The results folder: run ids, atomic writes, one folder per run.

runs/<run_id>/config.yaml, history.parquet, summary.json (see
docs/ARCHITECTURE.md). A run_id is derived from the resolved config, so a
second launch of the same sweep finds its finished runs and skips them.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf

import attention

# Keys that change where or how results are written, not what is measured.
NOT_IDENTITY = ("results_dir", "overwrite", "progress", "logger", "experiment", "hydra", "runtime")
# Keys that change how runs are scheduled, not their numbers (a lane that train.prune
# lets run is the same run with pruning off; one it stops says so in its status): a seed or a
# learning rate trained as a lane of a group is the same run as trained alone.
NOT_IDENTITY_KEYS = (("train", "n_seeds"), ("optimizer", "lr_grid"), ("train", "prune"), ("attention", "c_grid"))
# Keys added after runs were first recorded: at these values they are left out
# of the identity, so that every run recorded before the key existed keeps its id.
LATER_KEYS = {("train", "stop_at_threshold"): False, ("model", "width"): "fixed",
              ("model", "reassociate"): False, ("task", "distinct_values"): False,
              ("task", "head"): "value_half", ("model", "positions"): False,
              ("model", "mlp"): 0, ("task", "n_keys"): None,
              ("attention", "log_n"): None, ("model", "qk_init_gain"): 1.0,
              ("attention", "qk_rms"): False}
FINISHED = ("completed", "diverged")
RUN_FILES = ("config.yaml", "history.parquet", "summary.json")
PACKAGES = ("jax", "jaxlib", "optax", "hydra-core", "wandb", "pandas", "numpy")


def identity(cfg: DictConfig) -> dict:
    """The part of the config that determines the numbers."""
    resolved = OmegaConf.to_container(cfg, resolve=True)
    ident = {k: v for k, v in resolved.items() if k not in NOT_IDENTITY}
    for group, key in NOT_IDENTITY_KEYS:
        ident.get(group, {}).pop(key, None)
    _n_keys_as_alias(ident.get("task", {}))
    for (group, key), default in LATER_KEYS.items():
        if group in ident and ident[group].get(key, default) == default:
            ident[group].pop(key, None)
    if not _reassociable(ident.get("attention", {}).get("name")):
        ident.get("model", {}).pop("reassociate", None)  # changes nothing for this variant
    return ident


def _n_keys_as_alias(task: dict) -> None:
    """task.n_keys=8 on assoc_recall is task.n_pairs=8: one run, one id (the same as before the
    key existed)."""
    from experiments.tasks import TASKS  # the tasks import the store's neighbours: late, no cycle
    alias = getattr(TASKS.get(task.get("name")), "n_keys_alias", None)
    if alias and task.get("n_keys") is not None:
        task[alias] = task.pop("n_keys")


def _reassociable(name) -> bool:
    variant = attention.VARIANTS.get(name)
    return bool(variant and variant.reassociable)


def run_id(cfg: DictConfig) -> str:
    """Readable and unique: <attention>-dk<d_k>-<task>-<optimizer>-s<seed>-<hash>."""
    ident = identity(cfg)
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:10]
    return (f"{cfg.attention.name}-dk{cfg.d_k}-{cfg.task.name}-{cfg.optimizer.name}"
            f"-s{cfg.seed}-{digest}")


def run_dir(results_dir: str | Path, rid: str) -> Path:
    return Path(results_dir) / "runs" / rid


def _atomic_writes(writes: list[tuple[Path, object]]) -> None:
    """write(temp path) for each (path, write) into a temp file beside `path`, then
    rename every temp over its path: never a half file, and files written together
    (collect's two tables) change together, or, when one write fails (a full
    disk), none does. Every file of a results folder goes through here."""
    temps = []
    try:
        for path, write in writes:
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            os.close(fd)
            temps.append((tmp, path))
            write(tmp)
            os.chmod(tmp, 0o644)  # mkstemp makes 0600; results are meant to be shared
        for tmp, path in temps:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in temps:
            Path(tmp).unlink(missing_ok=True)
        raise


def _atomic_write(path: str | os.PathLike, write) -> None:
    _atomic_writes([(Path(path), write)])


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())

    _atomic_write(path, write)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_parquet(path: str | os.PathLike, frame: pd.DataFrame) -> None:
    atomic_write_parquets({path: frame})


def atomic_write_parquets(tables: dict[str | os.PathLike, pd.DataFrame]) -> None:
    """Every table written, or none changed."""
    _atomic_writes([(Path(path), lambda tmp, f=frame: f.to_parquet(tmp, index=False))
                    for path, frame in tables.items()])


def check_run_folder(folder: Path) -> None:
    """An OSError naming the path when train could not write the run's files there:
    a file where the run folder belongs, or a folder where one of its files does.
    Nothing is removed: what is there may be someone's."""
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "is a file where this run's folder belongs; "
                                 "move it away and re-run", str(folder))
    for name in RUN_FILES:
        if (folder / name).is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a folder where this run's file belongs; "
                                    "move it away and re-run", str(folder / name))


def package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def write_config(folder: Path, cfg: DictConfig) -> None:
    plain = {k: v for k, v in OmegaConf.to_container(cfg, resolve=True).items() if k != "hydra"}
    atomic_write_text(folder / "config.yaml", OmegaConf.to_yaml(OmegaConf.create(plain)))


def write_history(folder: Path, rows: list[dict[str, Any]]) -> None:
    atomic_write_parquet(folder / "history.parquet", pd.DataFrame(rows))


def write_summary(folder: Path, summary: dict[str, Any]) -> None:
    atomic_write_text(folder / "summary.json", json.dumps(summary, indent=2, sort_keys=True,
                                                          default=str) + "\n")
