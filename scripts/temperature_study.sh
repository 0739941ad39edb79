#!/usr/bin/env bash
# The temperature study in one command (conf/experiment/temperature.yaml declares it; conf/analysis.yaml
# `temperature:` how it is read). Cell by cell, cheapest first (n_keys 4, 16, 64; d_k 4, 16, 64 in
# each): the multiplier grid as lanes on the selection seeds 0-2 with the learned temperature beside
# it; then the confirmation (experiments.temperature_confirm): fresh seeds from 100 at each cell's
# estimated optimum c* and at c = 1; then the tables and the report. Interrupted? Run it again:
# finished runs are skipped.
#   RESULTS=results/temperature_runs bash scripts/temperature_study.sh
# An arm with its own cells in its preset (EXPERIMENT=temperature_qk_rms: q and k RMS-normed) trains
# those cells, then the same confirmation and report. EXPERIMENT=temperature_mqar (the second task)
# trains n_keys 2, 8, 32 at seq_len 4 n_keys, the learned temperature beside each.
set -euo pipefail
export RESULTS=${RESULTS:-results/temperature_runs}  # regenerate.sh reads it
ONLY=${ONLY:-}  # "selection": stop after the grid and the learned temperature
EXPERIMENT=${EXPERIMENT:-temperature}
train() { python -m experiments.train -m experiment="$EXPERIMENT" results_dir="$RESULTS" "$@"; }
if [ "$EXPERIMENT" = temperature ]; then
  for n in 4 16 64; do
    train task.n_keys=$n d_k=4,16,64
    train task.n_keys=$n d_k=4,16,64 attention=learned_temperature
  done
elif [ "$EXPERIMENT" = temperature_mqar ]; then
  for n in 2 8 32; do  # MQAR's sequence: n pairs, then a query slot per key at even offsets
    train task.n_keys=$n task.seq_len=$((4 * n))
    train task.n_keys=$n task.seq_len=$((4 * n)) attention=learned_temperature
  done
else
  train
fi
[ "$ONLY" = selection ] && exit 0
python -m experiments.temperature_confirm results_dir="$RESULTS"
bash "$(dirname "$0")/regenerate.sh"
