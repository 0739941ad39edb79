#!/usr/bin/env bash
# Rebuild the tables, figures, REPORT.md and dashboard.html from the results
# folder alone (no W&B, no network): experiments.regenerate hands each key to the
# steps that read it (keep_tabled=true to collect: keeps the tabled runs of a
# committed study whose run folders are not here; primary_task=... and the other
# keys of conf/analysis.yaml to plot, report and dashboard) and refuses a key no
# step reads before anything runs.
set -euo pipefail
# RESULTS goes to Hydra quoted, its own quotes escaped: Hydra's grammar refuses a bare value with
# letters outside ASCII, brackets or quotes, and a quoted one holds any path
results=${RESULTS:-results}
results=${results//\'/\\\'}
exec python -m experiments.regenerate "results_dir='${results}'" "$@"
