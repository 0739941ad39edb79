"""`python -m experiments.bench`: how fast the harness is on this machine.

    python -m experiments.bench results_dir=results          # everything (~6 min on 2 cores)
    python -m experiments.bench claim_quick=false            # skip the two sweeps (~1 min)
    python -m experiments.bench bench_size=quick             # every figure on a tiny model, to
                                                             # check it runs (tests/test_bench.py)

Writes ${results_dir}/bench.json and prints a table of figures against
their targets (for a 2-core CPU):
  1. harness_vs_bare_ratio: throughput of the harness's train step (a
     lax.scan chunk with in-graph batches and measurements) over a bare
     jitted step of the same model and batch called from Python (>= 0.9);
  2. vmap_seed_speedup: n_seeds seeds vmapped against the same seeds one
     after another, training time only (>= 2): the median of 5 alternating
     pairs, with their min and max (vmap_seed_speedup_min, _max);
  3. compile_cached_over_cold: compile time with the persistent cache
     over a cold compile, each in a fresh process (<= 0.2);
  4. claim_quick_wall_s: `experiment=claim_quick` end to end, cold cache (<= 120);
  5. fraction_of_matmul_peak: achieved GFLOP/s of the harness's train step
     at d_k = peak_d_k over this machine's float32 matmul peak, measured in
     the same run (>= 0.5);
  6. peak_rss_gb: peak resident memory of the quick sweep (<= 2);
  7. lane_throughput: run-steps/s (lanes x steps/s of one program) at
     lane_counts lanes, on the light step (scaled, d_k=64) and the heavy one
     (additive, d_k=1024); lane_speedup_16 and lane_speedup_32 over one lane
     on the light step (>= 3 and >= 5); heavy_lane_ratio_min, the least
     ratio over one lane on the heavy step (>= 1: more lanes never lower it);
     single_lane_step_s, seconds per step of one light lane.
"""
from __future__ import annotations

from experiments.app import interrupt

interrupt.watch_imports()  # before the heavy imports below (see app.interrupt)

from experiments.app.bench_job import run, validate
from experiments.app.command import make_main

main = make_main("bench", run, validate)

if __name__ == "__main__":
    main()
