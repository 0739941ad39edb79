"""Every in-process test sees two CPU devices, as a training job does on a
2-core machine (runtime.configure): the seed axis of a group is then really
spread over devices (training.lane_axis), whatever the machine running the tests."""
import atexit
import os
import shutil
import tempfile
from pathlib import Path

import jax

jax.config.update("jax_num_cpu_devices", 2)

# One persistent compilation cache per test process (an xdist worker), for its
# in-process programs and the commands it launches (they inherit the
# variable): the suite compiles many identical programs (the same tiny model
# in several modules, a relaunch after a kill), and none of it lands in the
# user's own cache. Not shared between workers: JAX writes an entry in place,
# and a worker reading another's half-written entry would warn and recompile.
_CACHE = Path(tempfile.mkdtemp(prefix="attention-tests-jax-"))
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
os.environ["JAX_COMPILATION_CACHE_DIR"] = str(_CACHE)

from experiments.app import runtime  # noqa: E402 - after the device count is set

runtime.configure_cache(True, _CACHE)


import pytest


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop each module's compiled programs when it ends: a worker runs many
    modules, and their executables would otherwise pile up in memory (the
    persistent cache makes a later recompile cheap)."""
    yield
    from experiments.training import group

    group.release_compiled()
    jax.clear_caches()
    runtime.configure_cache(True, _CACHE)  # a module's runtime.compile_cache=false ends with it
