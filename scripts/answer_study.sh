#!/usr/bin/env bash
# The committed study (results/reference/README.md) in one command: each cell's rates chosen
# on seeds 0-7 (train.prune on), then fresh seeds trained at the chosen rates, cheapest cell
# first; then sub-claim 6's width setting, the probe and cost instruments, and the analysis.
# About 4.5 h on 2 cores. Interrupted? Run it again: finished runs are skipped, and a cell's
# confirmation is chosen again from its selection, which by then is whole.
#   RESULTS=results/answer bash scripts/answer_study.sh
set -euo pipefail
RESULTS=${RESULTS:-results/answer}
train() { python -m experiments.train -m results_dir="$RESULTS" "$@"; }
confirm() { python -m experiments.confirm results_dir="$RESULTS" "$@"; }

train experiment=answer_wide
train experiment=answer cell=sgd_assoc_recall attention=scaled,unscaled,additive,qk_norm
# qk_norm's best SGD rate at d_k = 2 sat at the grid's low edge: two lower rates bound it
train experiment=answer cell=sgd_assoc_recall attention=qk_norm d_k=2 'optimizer.lr_grid=[1e-3,3e-3]'
confirm for_cell=sgd_assoc_recall n_seeds=18
train experiment=answer cell=adam_assoc_recall
confirm for_cell=adam_assoc_recall n_seeds=10
train experiment=answer_vector
confirm for_cell=adam_vector_retrieval_d8 n_seeds=8
train experiment=answer cell=adam_mqar
confirm for_cell=adam_mqar n_seeds=8
train experiment=mup_width
python -m experiments.probe input_model=all 'seeds=[0,1,2]' 'd_ks=[2,4,8,16,32,64,128,256,512,1024]' \
  results_dir="$RESULTS"
python -m experiments.cost results_dir="$RESULTS"
RESULTS="$RESULTS" bash "$(dirname "$0")/regenerate.sh"
