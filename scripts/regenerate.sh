#!/usr/bin/env bash
# Rebuild the tables, figures, REPORT.md and dashboard.html from the results
# folder alone (no W&B, no network).
set -euo pipefail
RESULTS=${RESULTS:-results}
python -m experiments.collect results_dir="$RESULTS"
python -m experiments.plot results_dir="$RESULTS"
python -m experiments.report results_dir="$RESULTS"
python -m experiments.dashboard results_dir="$RESULTS"
