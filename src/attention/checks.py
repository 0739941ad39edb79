"""The one range check of the project: a value outside its range is one line,
`<key>: <what is allowed>, got <value>`, raised as ValueError.

Every layer checks its values with it (a variant's options as `attention.<key>`,
a task's as `task.<field>`, the commands' keys by their full name); the app's
pre-flight prints the line and exits with code 2. It sits in the lowest layer
because the model's own option checks are its first users.
"""
from __future__ import annotations

import numbers
from typing import Any


def check(ok: bool, key: str, allowed: str, value: Any, error: type[ValueError] = ValueError) -> None:
    """Raise error('<key>: <allowed>, got <value!r>') unless `ok` (`error`: ValueError or a
    subclass, e.g. the app's ConfigError where a caller tells the two apart)."""
    if not ok:
        raise error(f"{key}: {allowed}, got {value!r}")


def is_int(value: Any) -> bool:
    """An integer that is not a bool (True would pass as 1)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
