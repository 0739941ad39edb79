"""Every in-process test sees two CPU devices, as a training job does on a
2-core machine (runtime.configure): the seed axis of a group is then really
spread over devices (training.lane_axis), whatever the machine running the tests.

The suite compiles with cheaper code generation, for itself and for every
command it starts (they inherit the environment): no LLVM optimisation and
XLA's older CPU fusion emitters. A tiny training's programs then compile
about 5x faster, which is most of the suite's time. What changes is rounding
only, and every comparison in the suite is between programs compiled alike
(the production setting is XLA's default, untouched)."""
import os

CHEAP_COMPILE = "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"
os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {CHEAP_COMPILE}".strip()

import jax  # noqa: E402 - XLA reads its flags when the backend starts

jax.config.update("jax_num_cpu_devices", 2)


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
