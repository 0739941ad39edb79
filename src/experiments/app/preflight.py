"""The pre-flight: every job of a command line composed and validated before Hydra starts.

A user mistake (unknown key, wrong type, value out of range, unknown config
option) must end in one line that names the key and what is allowed, exit
code 2, and nothing written. Hydra itself reports such mistakes in several
lines and only when a job starts (in a multirun: after earlier jobs ran), so
every job of the command line is composed and validated here first.

`check_command_line` parses the flags with Hydra's own parser (one line
instead of argparse's usage block), checks that results_dir is, or can be
created as, a writable folder, and runs the command's validator: for train
that includes the memory estimate (training.memory). Only then does Hydra
start and create its folders.
"""
from __future__ import annotations

import errno
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterable

from omegaconf import DictConfig, OmegaConf

from experiments.app.errors import (CONF_DIR, SWEEP_JOBS_ENV, ConfigError, _first_line, argument_error, explain,
                                   fail, fault, fault_line)

Validator = Callable[[DictConfig], None]
SweepValidator = Callable[[list[DictConfig]], None]  # every composed job of a command line at once
# what the commands add under results_dir (runs/<run id>/history.parquet.tmp, hydra/multirun/...)
PATH_HEADROOM = 200
# less free than this and Hydra's own first files (its config copies) fail to write, in a traceback
MIN_FREE_BYTES = 1 << 20


def nearest_existing(path: Path) -> Path:
    """`path` itself, or its nearest ancestor that exists (what a new folder would be made in)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_output_dir(key: str, path) -> None:
    """ConfigError unless `path` is, or can be created as, a writable folder.

    Nothing is left behind. The nearest existing ancestor must be a folder
    this user may write into, by its permission bits and in fact."""
    text = str(path) if path is not None else ""
    if not text.strip():
        raise ConfigError(f"{key}: must be a non-empty path, got {text!r}")
    target = Path(os.path.abspath(text))  # as Hydra and the command will use it (no ~ expansion)
    check_path_length(key, text)
    existing = nearest_existing(target)
    if not existing.is_dir():
        where = "is a file" if existing == target else f"cannot be created: {existing} is a file"
        raise ConfigError(f"{key}: {text!r} {where}, not a folder; pick another {key}")
    if not os.access(existing, os.W_OK | os.X_OK):
        where = "is not writable" if existing == target else \
            f"cannot be created: {existing} is not writable"
        raise ConfigError(f"{key}: {text!r} {where}; pick another {key}")
    _try_writing(key, text, existing, existing == target)


def check_path_length(key: str, text: str) -> None:
    """Each name within the file system's limit, and room left under the folder for what
    the commands write there."""
    target = Path(os.path.abspath(text))
    anchor = next((p for p in [target, *target.parents] if path_exists(p)), Path("/"))
    name_max = os.pathconf(anchor, "PC_NAME_MAX") if hasattr(os, "pathconf") else 255
    path_max = os.pathconf(anchor, "PC_PATH_MAX") if hasattr(os, "pathconf") else 4096
    for part in target.parts:
        if len(os.fsencode(part)) > name_max:
            raise ConfigError(f"{key}: a folder name of {len(os.fsencode(part))} bytes "
                              f"({part[:20]}...) is longer than this file system allows ({name_max})")
    if len(os.fsencode(str(target))) > path_max - PATH_HEADROOM:
        raise ConfigError(f"{key}: the path is {len(os.fsencode(str(target)))} bytes long; at most "
                          f"{path_max - PATH_HEADROOM} leaves room for the files written under it")


def path_exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long, a loop of links
        return False


def _quote_hint(line: str) -> str:
    """How to quote a value that Hydra's grammar refuses: a list element holding '=' or a
    value with characters the grammar reserves (~, spaces, brackets in a path)."""
    key, eq, value = line.partition("=")
    if not eq or not value:
        return ""
    if value.startswith("[") and value.endswith("]"):
        items = ",".join(f"'{v.strip()}'" for v in value[1:-1].split(","))
        return f"; quote each element: \"{key}=[{items}]\""
    if value[0] in "[{":  # an unclosed list or dict: quoting would not help
        return ""
    return f"; quote the value: \"{key}='{value}'\""


def _try_writing(key: str, text: str, folder: Path, is_target: bool) -> None:
    """Permission bits can say yes where the file system says no (a read-only
    mount; /proc for root): make and remove a probe folder to be sure, then
    put the folder's times back, so that the look leaves no trace."""
    before = folder.stat()
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".attn-write-check-", dir=folder))
    except OSError as exc:
        where = "is not writable" if is_target else f"cannot be created: {folder} is not writable"
        raise ConfigError(f"{key}: {text!r} {where} ({exc.strerror or exc}); "
                          f"pick another {key}") from None
    os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))


def parse_args(argv: list[str]):
    """Hydra's own argument parser, failing in one line (not argparse's usage block)."""
    from hydra._internal.utils import get_args_parser

    parser = get_args_parser()
    parser.error = argument_error
    return parser.parse_args(argv)


def expand_overrides(overrides: list[str]) -> list[tuple[str, list[str]]]:
    """(key, [one override string per swept value]) for each override, parsed
    by Hydra's own grammar (so a list value's commas are not a sweep).
    Raises ConfigError on an override the grammar rejects."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    expanded: list[tuple[str, list[str]]] = []
    for line in overrides:
        try:
            [o] = parser.parse_overrides(overrides=[line])
        except Exception as exc:  # Hydra's override grammar
            raise ConfigError(f"{line}: not a key=value override ({_first_line(str(exc))}){_quote_hint(line)}") \
                from None
        key = o.get_key_element()
        if o.is_sweep_override():
            expanded.append((key, [f"{key}={v}" for v in o.sweep_string_iterator()]))
        else:
            expanded.append((key, [o.input_line]))
    return expanded


def _expand(overrides: list[str]) -> list[tuple[str, list[str]]]:
    try:
        return expand_overrides(overrides)
    except ConfigError as exc:
        fail(str(exc))


def coverage(choices: list[tuple[str, list[str]]]) -> Iterable[list[str]]:
    """Jobs such that every value of every swept key is composed at least once.

    The full product of a big sweep can be thousands of jobs; each value is a
    separate possible mistake, so a one-at-a-time walk finds them all.
    """
    base = [vals[0] for _, vals in choices]
    yield list(base)
    for i, (_, vals) in enumerate(choices):
        for v in vals[1:]:
            job = list(base)
            job[i] = v
            yield job


IN_PROCESS_LAUNCHER = "hydra._internal.core_plugins.basic_launcher.BasicLauncher"


def check_single_values(overrides: list[str]) -> None:
    """ConfigError for several values without -m: Hydra says "Ambiguous value"; a comma in
    a path is the usual cause, and quoting keeps it."""
    for key, vals in expand_overrides(overrides):
        if len(vals) > 1:
            text = ",".join(v.split("=", 1)[1] for v in vals)
            raise ConfigError(f"{key}: {text!r} reads as {len(vals)} values (a sweep, for -m); "
                              f"for one value with a comma, quote it: \"{key}='{text}'\"")


def check_jobs(config_name: str, argv: list[str], validate: Validator,
               validate_sweep: SweepValidator | None = None) -> tuple[int, bool]:
    """Compose and validate every value of every swept key: (number of jobs, whether they
    all run in this process). Beyond `validate`: results_dir (where Hydra and the command
    write) must be a writable folder or creatable as one. Fails in one line (exit 2)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    args = parse_args(argv)
    cli = _expand(args.overrides)
    if not args.multirun:
        try:
            check_single_values(args.overrides)
        except ConfigError as exc:
            fail(str(exc))
    GlobalHydra.instance().clear()
    composed: list[DictConfig] = []
    n_jobs = math.prod(len(vals) for _, vals in cli)
    inner_jobs = 1
    here = True  # a single run always is; a sweep's jobs are with Hydra's basic launcher
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        base_jobs = list(coverage(cli)) if cli else [[]]
        for job in base_jobs:
            cfg = _compose_or_fail(compose, config_name, job)
            launcher = OmegaConf.select(cfg, "hydra.launcher._target_")
            here = here and (not args.multirun or launcher in (None, IN_PROCESS_LAUNCHER))
            # sweeps declared inside a config (experiment presets)
            params = OmegaConf.select(cfg, "hydra.sweeper.params") or {}
            inner = [_expand([f"{k}={v}"])[0]
                     for k, v in params.items() if not any(k == c for c, _ in cli)]
            inner_jobs = max(inner_jobs, math.prod(len(vals) for _, vals in inner))
            for extra in (coverage(inner) if inner else [[]]):
                job_cfg = _compose_or_fail(compose, config_name, job + extra) if extra else cfg
                _validate_or_fail(validate, job_cfg, multirun=args.multirun)
                composed.append(job_cfg)
        if validate_sweep is not None:
            try:
                validate_sweep(composed)
            except ValueError as exc:  # ConfigError too
                fail(str(exc))
    GlobalHydra.instance().clear()
    return n_jobs * inner_jobs, here


def _validate_or_fail(validate: Validator, cfg: DictConfig, multirun: bool) -> None:
    from omegaconf import read_write
    from omegaconf.errors import OmegaConfBaseException

    if multirun and "hydra" in cfg:  # what hydra.main will set: validators may read it
        with read_write(cfg.hydra):
            cfg.hydra.mode = "MULTIRUN"
    try:
        if "results_dir" in cfg:
            check_output_dir("results_dir", cfg.results_dir)
            check_free_space(cfg.results_dir)
        _check_hydra_keys(cfg, multirun)
        validate(cfg)
    except (ValueError, ConfigError) as exc:
        fail(str(exc))
    except OmegaConfBaseException as exc:  # a validator reading a key the config lacks
        fail(explain(exc))
    except OSError as exc:  # the machine's fault: exit 1
        fault(fault_line(exc, str(cfg.results_dir)))


def check_free_space(path) -> None:
    """OSError(ENOSPC) when the disk that would hold `path` is (nearly) full."""
    existing = nearest_existing(Path(os.path.abspath(str(path))))
    if shutil.disk_usage(existing).free < MIN_FREE_BYTES:
        raise OSError(errno.ENOSPC, "No space left on device", str(existing))


def _check_hydra_keys(cfg: DictConfig, multirun: bool) -> None:
    """The folder Hydra writes its logs to, and the working folder the job keeps."""
    if OmegaConf.select(cfg, "hydra.job.chdir"):
        raise ConfigError("hydra.job.chdir: must be false (results_dir is read from the folder the "
                          "command starts in), got True")
    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    try:
        folder = OmegaConf.select(cfg, key)
    except Exception:  # noqa: BLE001 - an interpolation only a running Hydra resolves
        return
    if folder is not None:
        check_output_dir(key, folder)


def check_command_line(config_name: str, argv: list[str], validate: Validator,
                       validate_sweep: SweepValidator | None = None) -> bool:
    """What a command does before Hydra starts: every job of `argv` composed and
    validated, or one line on stderr and exit 2. Flags that only print (--help,
    --cfg, --info) skip the pre-flight. Returns whether the jobs run in this
    process (False: a launcher runs them in others)."""
    args = parse_args(argv)
    if args.help or args.hydra_help or args.cfg or args.info is not None or args.shell_completion:
        return True
    n_jobs, here = check_jobs(config_name, argv, validate, validate_sweep)
    os.environ[SWEEP_JOBS_ENV] = str(n_jobs if args.multirun else 1)
    return here


def _compose_or_fail(compose, config_name: str, overrides: list[str]) -> DictConfig:
    try:
        return compose(config_name=config_name, overrides=overrides, return_hydra_config=True)
    except Exception as exc:  # composition errors come in many Hydra/OmegaConf types
        fail(explain(exc, overrides))
