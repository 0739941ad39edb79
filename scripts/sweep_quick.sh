#!/usr/bin/env bash
# The quick claim sweep (scaled, unscaled, additive x 5 d_k x 3 seeds), then
# the tables, figures, report and dashboard. Extra arguments go to the sweep.
set -euo pipefail
RESULTS=${RESULTS:-results}
python -m experiments.train -m experiment=claim_quick results_dir="$RESULTS" "$@"
exec "$(dirname "$0")/regenerate.sh"
