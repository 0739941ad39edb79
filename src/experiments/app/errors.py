"""One-line errors for user mistakes: the error type, the exit code, and the
translation of Hydra/OmegaConf composition errors into `key: what is allowed`.

The bottom of the app layer: every command module may import it; it imports
nothing of the project.
"""
from __future__ import annotations

import errno
import os
import re
import sys
from pathlib import Path

CONF_DIR = (Path(__file__).resolve().parents[3] / "conf").as_posix()
EXIT_USAGE = 2
SWEEP_JOBS_ENV = "ATTN_SWEEP_JOBS"  # read by experiments.app.progress for the sweep bar


class ConfigError(ValueError):
    """A user mistake in the configuration; its message is one line."""


def fail(message: str) -> None:
    """Print `error: <message>` as one line on stderr and exit with code 2."""
    line = " ".join(part.strip() for part in str(message).splitlines() if part.strip())
    print(f"error: {line}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def argument_error(message: str) -> None:
    """argparse's error (`parser.error = argument_error`) as fail's one line, naming the argument,
    not its usage block."""
    m = re.match(r"argument ([^:]+): (.*)", message)
    fail(f"{m.group(1).split('/')[0]}: {m.group(2)}" if m else f"command line: {message}")


EXIT_ENVIRONMENT = 1


def fault(message: str) -> None:
    """A fault of the environment, not of the input: `error: <message>` as one line, exit 1."""
    line = " ".join(part.strip() for part in str(message).splitlines() if part.strip())
    print(f"error: {line}", file=sys.stderr, flush=True)
    raise SystemExit(EXIT_ENVIRONMENT)


def _mount(path: Path) -> Path:
    path = path.resolve()
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def fault_line(exc: OSError, results_dir: str | None) -> str:
    """One line naming the file (or results_dir) and the cause; for a full disk,
    the disk too. Every file is written atomically: what was there is intact."""
    where = getattr(exc, "filename2", None) or exc.filename or results_dir or "."  # a rename: its target
    if exc.errno in (errno.ENOSPC, errno.EDQUOT) or "No space left" in str(exc):
        folder = Path(results_dir or where)
        return (f"no space left on the disk mounted at {_mount(folder)} while writing to "
                f"{where}; free space there and re-run (results written before are intact)")
    return f"{where}: {exc.strerror or exc}"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _typed(key: str, overrides) -> str | None:
    """What the command line gave for `key` (as typed: Hydra has converted it by now)."""
    for line in reversed(list(overrides)):
        name, eq, value = line.partition("=")
        if eq and name.lstrip("+~") == key:
            return value
    return None


def _nearest(name: str, allowed) -> str:
    """' (did you mean X?)' for a near miss among `allowed`, else ''."""
    import difflib

    close = difflib.get_close_matches(name, [str(a) for a in allowed], n=1, cutoff=0.75)
    return f" (did you mean {close[0]}?)" if close else ""


def explain(exc: BaseException, overrides=()) -> str:
    """One line from an OmegaConf/Hydra composition error; `overrides`: the command line's
    key=value arguments, to echo a value as typed."""
    from omegaconf.errors import OmegaConfBaseException

    causes = []
    e: BaseException | None = exc
    while e is not None:
        causes.append(e)
        e = e.__cause__ or e.__context__
    for e in causes:
        if isinstance(e, OmegaConfBaseException) and getattr(e, "full_key", None):
            key, msg = e.full_key, _first_line(str(e))
            m = re.match(r"Key '(.+)' not in '(.+)'|Key '(.+)' is not in struct", msg)
            if m:
                allowed = _allowed_keys(e)
                return f"{key}: unknown key{_nearest(str(key).split('.')[-1], allowed.split(', '))}; " \
                       f"allowed keys here: {allowed}"
            m = re.match(r"Value '(.*?)' (?:of type '.*?' )?could not be converted to (\w+)", msg)
            if m:
                given = _typed(str(key), overrides)
                return f"{key}: expected {m.group(2).lower()}, got {m.group(1) if given is None else given!r}"
            m = re.match(r"Value '(.*?)' is not a valid bool", msg)
            if m:
                return f"{key}: expected true or false, got {m.group(1)!r}"
            m = re.match(r"Invalid value assigned: (\w+) is not a ListConfig", msg)
            if m:
                return f"{key}: expected a list such as [a,b], got a {m.group(1)}"
            return f"{key}: {msg}"
    msg = str(exc)
    m = re.search(r"Could not find '([^']+)/([^']*)'\s*\nAvailable options in '[^']+':\s*\n(.*)", msg, re.S)
    if m:
        listed = m.group(3).split("Config search path")[0].splitlines()
        options = ", ".join(line.strip() for line in listed
                            if line.strip() and not line.strip().startswith("schema_"))
        what = f"unknown option {m.group(2)!r}" if m.group(2) else "needs an option name"
        hint = _nearest(m.group(2), options.split(", ")) if m.group(2) else ""
        return f"{m.group(1)}: {what}{hint}; allowed: {options}"
    m = re.search(r"Could not override '([^']+)'", msg)
    if m and (Path(CONF_DIR) / m.group(1)).is_dir():
        return (f"{m.group(1)}: cannot be set on this command's command line: '{m.group(1)}' "
                f"is also a config group of experiments.train (conf/{m.group(1)}/)")
    if m:
        return f"{m.group(1)}: unknown key (a typo? see `--cfg job` for the valid keys)"
    return _first_line(msg)


def _allowed_keys(e) -> str:
    obj = getattr(e, "object_type", None)
    if obj is not None and hasattr(obj, "__dataclass_fields__"):
        return ", ".join(f for f in obj.__dataclass_fields__ if f != "defaults")
    parent = getattr(e, "parent_node", None)
    if parent is not None:
        return ", ".join(str(k) for k in parent.keys())
    return "see `--cfg job`"
