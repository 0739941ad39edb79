#!/usr/bin/env bash
# Create a W&B sweep (default: the claim_quick grid) and print the agent command.
#   scripts/wandb_sweep.sh                          # sweeps/claim_quick.yaml in project attention-scaling
#   scripts/wandb_sweep.sh sweeps/claim_quick.yaml --entity my-team
# then, on each machine (from the repository root, .venv activated):
#   wandb agent <entity>/attention-scaling/<sweep id>
set -euo pipefail
SWEEP=${1:-sweeps/claim_quick.yaml}
exec wandb sweep --project "${WANDB_PROJECT:-attention-scaling}" "${@:2}" "$SWEEP"
