#!/usr/bin/env bash
# The full claim sweep (every variant x 8 d_k x 5 seeds x 3 tasks x adam, sgd:
# 1,680 runs). On a CPU this takes hours: use launcher=joblib for parallel
# jobs, or scripts/slurm_sweep.sbatch on a cluster. Interrupted? Run it again:
# finished runs are skipped.
set -euo pipefail
RESULTS=${RESULTS:-results}
python -m experiments.train -m experiment=claim_full results_dir="$RESULTS" "$@"
exec "$(dirname "$0")/regenerate.sh"
