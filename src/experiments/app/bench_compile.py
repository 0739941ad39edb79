"""`python -m experiments.app.bench_compile <train overrides>`: compile one
training configuration in this fresh process and print its compile times as
one JSON line (the cold/cached comparison of `experiments.bench`). The
persistent cache is wherever JAX_COMPILATION_CACHE_DIR points. Beside the
times it prints how many compiles asked the cache and how many it answered
(JAX's own monitoring events): whether the cache served is a count, not a
guess from times that a busy machine stretches."""
from __future__ import annotations

import json
import sys
import time

import jax.monitoring
from hydra import compose, initialize_config_dir

from experiments.app import (
    config,  # noqa: F401 - registers the schemas
    runtime,
)
from experiments.app.errors import CONF_DIR
from experiments.training import loop
from experiments.training.group import prepare

CACHE_EVENTS = {"/jax/compilation_cache/compile_requests_use_cache": "cache_requests",
                "/jax/compilation_cache/cache_hits": "cache_hits"}


def main() -> None:
    start = time.perf_counter()
    counts = dict.fromkeys(CACHE_EVENTS.values(), 0)

    def count(event: str, **_) -> None:
        if event in CACHE_EVENTS:
            counts[CACHE_EVENTS[event]] += 1

    jax.monitoring.register_event_listener(count)
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=sys.argv[1:])
    runtime.configure_cache(True, runtime.default_cache_dir())
    group = prepare(cfg, loop.lanes_of(cfg)[:1])
    print(json.dumps({"compile_s": group.compile_time_s, "xla_compile_s": group.xla_compile_time_s,
                      "process_s": time.perf_counter() - start, **counts}))


if __name__ == "__main__":
    main()
