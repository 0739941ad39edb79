"""runtime: threads per parallel job, CPU affinity, the persistent compilation
cache. Process-wide settings, so each check runs in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from experiments.app.runtime import threads_per_job


@pytest.mark.parametrize("requested, parallel, cores, expected", [
    (None, 1, 8, 8), (None, 2, 2, 1), (None, 3, 8, 2), (None, 16, 8, 1), (3, 2, 8, 3),
])
def test_threads_per_job(requested, parallel, cores, expected):
    assert threads_per_job(requested, parallel, cores) == expected


def _python(code: str, **env) -> dict:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs CPU affinity and 2 cores")
def test_limit_threads_pins_the_job_to_its_share():
    got = _python(
        "import json, os\n"
        "from experiments.app import runtime\n"
        "runtime.limit_threads(1, job_num=1)\n"
        "runtime.set_cpu_devices(1)\n"
        "import jax\n"
        "print(json.dumps({'cores': sorted(os.sched_getaffinity(0)),"
        " 'omp': os.environ['OMP_NUM_THREADS'], 'devices': jax.local_device_count()}))")
    cores = sorted(os.sched_getaffinity(0))
    assert got == {"cores": [cores[1]], "omp": "1", "devices": 1}


def test_persistent_cache_is_written_and_read(tmp_path):
    code = (
        "import json, time, jax, jax.numpy as jnp\n"
        "from pathlib import Path\n"
        "from experiments.app import runtime\n"
        f"runtime.configure_cache(True, Path({str(tmp_path)!r}))\n"
        "f = jax.jit(lambda x: jnp.tanh(x @ x.T).sum())\n"
        "x = jnp.ones((64, 64))\n"
        "start = time.perf_counter(); f.lower(x).compile()\n"
        "print(json.dumps({'s': time.perf_counter() - start}))")
    _python(code)
    entries = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    assert entries, "nothing cached"
    mtimes = {p: p.stat().st_mtime_ns for p in entries}
    _python(code)  # a second process loads the entry instead of writing it again
    assert {p: p.stat().st_mtime_ns for p in entries} == mtimes


def test_cache_off_writes_nothing(tmp_path):
    _python(
        "import json, jax, jax.numpy as jnp\n"
        "from pathlib import Path\n"
        "from experiments.app import runtime\n"
        f"runtime.configure_cache(False, Path({str(tmp_path)!r}))\n"
        "jax.jit(lambda x: x * 2).lower(jnp.ones(3)).compile()\n"
        "print(json.dumps({}))", JAX_COMPILATION_CACHE_DIR="")
    assert list(tmp_path.iterdir()) == []
