"""Every in-process test sees two CPU devices, as a training job does on a
2-core machine (runtime.configure): the seed axis of a group is then really
spread over devices (training.lane_axis), whatever the machine running the tests."""
import jax

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
