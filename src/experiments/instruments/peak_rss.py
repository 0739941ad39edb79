"""Run a command and write its peak resident memory to a file, from a small
process: `python -m experiments.instruments.peak_rss OUT.json command ...`.

Why a process of its own: on Linux a child's ru_maxrss keeps the high-water
mark of the address space it was forked from (exec records the old one's),
so a command launched straight from the bench, which holds gigabytes of
compiled programs, reports the bench's memory instead of its own. Forked
from this small interpreter, the command's figure is its own.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys


def main(argv: list[str]) -> int:
    out_path, command = argv[0], argv[1:]
    proc = subprocess.Popen(command)  # stdout and stderr pass through
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    with open(out_path, "w") as f:
        json.dump({"maxrss_kib": usage.ru_maxrss}, f)  # the command and its reaped children
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
