"""Every in-process test sees two CPU devices, as a training job does on a
2-core machine (runtime.configure): the seed axis of a group is then really
spread over devices (training.lane_axis), whatever the machine running the tests.

The suite compiles with cheaper code generation, for itself and for every
command it starts (they inherit the environment): no LLVM optimisation,
XLA's older CPU fusion emitters, and each program's machine code generated in
one piece rather than split for parallel code generation (on 2 cores, with the
other worker busy, the split costs more than it saves: a tiny training's
process 6.2-6.7 s against 6.7-7.2 s, four pairs). A tiny training's programs
then compile about 5x faster, which is most of the suite's time. What changes is rounding
only, and every comparison in the suite is between programs compiled alike
(the production setting is XLA's default, untouched). JAX's lowering also leaves
out the Python tracebacks it otherwise records as every operation's location (a
debugging aid for compiler messages): about 7% of a tiny job's compile.

Programs the suite caches go to a folder of its own, never the user's cache
(runtime.default_cache_dir reads JAX_COMPILATION_CACHE_DIR first): an in-process
training with runtime.compile_cache left on would otherwise fill
~/.cache/attention-scaling/jax with these cheaply compiled programs. The
controller makes the folder, the xdist workers and every command a test starts
inherit it, and the controller removes it at the end. A test that needs a cache
of its own still names it."""
import os
import shutil
import tempfile

CHEAP_COMPILE = ("--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false "
                 "--xla_cpu_parallel_codegen_split_count=1")
os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {CHEAP_COMPILE}".strip()
os.environ["JAX_INCLUDE_FULL_TRACEBACKS_IN_LOCATIONS"] = "0"
os.environ["JAX_TRACEBACK_IN_LOCATIONS_LIMIT"] = "0"
SESSION_CACHE = "ATTN_TEST_SESSION_CACHE"  # set once by the controller, inherited by the workers
OWNS_SESSION_CACHE = SESSION_CACHE not in os.environ
if OWNS_SESSION_CACHE:
    os.environ[SESSION_CACHE] = tempfile.mkdtemp(prefix="attn-test-jax-cache-")
os.environ["JAX_COMPILATION_CACHE_DIR"] = os.environ[SESSION_CACHE]

import jax  # noqa: E402 - XLA reads its flags when the backend starts

jax.config.update("jax_num_cpu_devices", 2)


import pytest


# Slow beyond the modules' own pytestmark lines (make test-quick runs `-m "not slow"`): these files,
# and the tests whose names start so, plot a study, train or start commands (seconds each).
SLOW = ("test_analysis.py", "test_lr_study.py", "test_probe.py", "test_figures.py", "test_cost.py",
        "test_every_variant.py", "test_confirm.py", "test_first_screen.py", "test_reassociate.py",
        "test_mqar_zoology.py", "test_seeds.py", "test_regenerate.py", "test_reports_fresh.py",
        "test_own_study.py", "test_threefry.py", "test_runtime.py", "test_query_positions.py",
        "test_unreadable_kept.py", "test_profile.py",
        "test_bad_input.py::test_memory_estimate_is_near_xla", "test_bad_input.py::test_collect_",
        "test_bad_input_ranges.py::test_an_", "test_config.py::test_preflight_counts_jobs",
        "test_config.py::test_help_", "test_config.py::test_groups_are_complete",
        "test_prune.py::test_a_pruned_job_", "test_prune.py::test_replay_",
        "test_unlike_runs.py::test_several_", "test_unlike_runs.py::test_the_width_",
        "test_quality_profile.py::test_each_clause_",
        "test_lr_theory.py::test_one_adam_step")


# The modules that take longest (a worker's seconds: make test's --durations, each file run alone), longest first.
# make test hands out whole modules in collection order (--dist loadfile --no-loadscope-reorder):
# the long ones go out first and the short ones fill both workers' last minutes, where xdist's own
# order (most tests first) left the few-test, minute-long modules for the end, on one worker.
LONGEST_FIRST = ("test_own_study.py", "test_bench.py", "test_interrupt.py", "test_reassociate.py",
                 "test_train_e2e.py", "test_extending.py", "test_lanes.py", "test_analysis.py",
                 "test_lr_study.py", "test_launchers.py", "test_bad_input.py", "test_dashboard_browser.py",
                 "test_seeds.py", "test_divergence.py", "test_every_variant.py", "test_text_cell.py",
                 "test_quality_profile.py", "test_figures.py", "test_data_faults.py", "test_probe.py",
                 "test_profile.py", "test_confirm.py", "test_prune.py", "test_wandb_faults.py",
                 "test_reports_fresh.py", "test_determinism.py", "test_data_safety.py",
                 "test_bad_input_ranges.py")


def pytest_collection_modifyitems(config, items):
    for item in items:
        case = getattr(item, "callspec", None) and item.callspec.params.get("case")
        if item.nodeid.removeprefix("tests/").startswith(SLOW) or getattr(case, "subprocess", False):
            item.add_marker(pytest.mark.slow)  # a bad-input case run as a command is slow too
    items.sort(key=_module_rank(items))  # stable: each module's own tests keep their order


def _module_rank(items):
    """Listed modules by their place in LONGEST_FIRST; then modules all of whose tests are
    slow (a module added since the list was measured that trains); then the rest, as collected."""
    all_slow = {}
    for item in items:
        module = item.nodeid.split("::")[0].removeprefix("tests/")
        all_slow[module] = all_slow.get(module, True) and item.get_closest_marker("slow") is not None

    def rank(item):
        module = item.nodeid.split("::")[0].removeprefix("tests/")
        if module in LONGEST_FIRST:
            return LONGEST_FIRST.index(module)
        return len(LONGEST_FIRST) + (0 if all_slow[module] else 1)
    return rank


def pytest_unconfigure(config):
    if OWNS_SESSION_CACHE:
        shutil.rmtree(os.environ[SESSION_CACHE], ignore_errors=True)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop each module's compiled programs when it ends: a worker runs many
    modules, and their executables would otherwise pile up in memory (the
    persistent cache makes a later recompile cheap)."""
    yield
    jax.clear_caches()
