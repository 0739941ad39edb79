#!/usr/bin/env bash
# Rebuild the tables, figures, REPORT.md and dashboard.html from the results
# folder alone (no W&B, no network). Arguments go to collect: keep_tabled=true
# keeps the tabled runs of a committed study whose run folders are not here.
set -euo pipefail
RESULTS=${RESULTS:-results}
python -m experiments.collect results_dir="$RESULTS" "$@"  # e.g. keep_tabled=true
python -m experiments.plot results_dir="$RESULTS"
python -m experiments.report results_dir="$RESULTS"
python -m experiments.dashboard results_dir="$RESULTS"
