#!/usr/bin/env bash
# The committed reference in one command (docs/NEXT_REFERENCE.md: the plan, its projection and what it
# leaves out; scripts/study_plan.py prints the projection, about 6.9 h on 2 cores with the text
# cell). Each cell, cheapest first: its selection on seeds 0-7 over the rate grid (train.prune on),
# the committed reference's selection runs carried where today's presets name the same run; the
# whole-curve seeds 0-2 of scaled, unscaled, mup and unscaled_init in the Adam token cells trained
# at every rate to the budget (train.prune.spare_seeds); then fresh confirmation seeds from 200 at
# the chosen rates, stage 1 (conf/analysis.yaml two_stage.first_seeds) and stage 2's top-up. Then
# the text cell (trained apart in results/text) joins, sub-claim 6's width setting, the probe, the
# cost benchmark and the analysis. Interrupted? Run it again: finished runs are skipped, carried
# runs are not written twice, and a cell's confirmation is chosen again from its whole selection.
#   RESULTS=results/answer bash scripts/answer_study.sh
set -euo pipefail
RESULTS=${RESULTS:-results/answer}
REFERENCE=${REFERENCE:-results/reference}  # the committed study whose selection runs are carried
TEXT=${TEXT:-results/text}                 # the text cell's own folder
FRESH=200  # the confirmation seeds: above every seed any study or pilot has trained
train() { python -m experiments.train -m results_dir="$RESULTS" "$@"; }
confirm() { python -m experiments.confirm results_dir="$RESULTS" seed_from=$FRESH "$@"; }
carry() { PYTHONPATH=src python "$(dirname "$0")/carry_runs.py" "$@"; }

carry selection "$REFERENCE" "$RESULTS" --seeds-below 8 --whole-seeds 3 \
  --whole-cells adam_assoc_recall,adam_mqar --whole-variants scaled,unscaled,mup

train experiment=answer cell=sgd_assoc_recall attention=scaled,unscaled,additive,qk_norm,unscaled_init
# qk_norm's best SGD rate at d_k = 2 sits at the grid's low edge: two lower rates bound it
train experiment=answer cell=sgd_assoc_recall attention=qk_norm d_k=2 'optimizer.lr_grid=[1e-3,3e-3]'
train experiment=answer_wide cell=sgd_assoc_recall
confirm for_cell=sgd_assoc_recall n_seeds=8
confirm for_cell=sgd_assoc_recall stage=2

train experiment=answer cell=adam_assoc_recall attention=scaled,unscaled,mup8,unscaled_init train.prune.spare_seeds=3
train experiment=answer cell=adam_assoc_recall attention=additive,qk_norm
train experiment=answer_wide cell=adam_assoc_recall
confirm for_cell=adam_assoc_recall n_seeds=8
confirm for_cell=adam_assoc_recall stage=2

train experiment=answer_vector
confirm for_cell=adam_vector_retrieval_d8 n_seeds=8
confirm for_cell=adam_vector_retrieval_d8 stage=2

train experiment=answer cell=adam_mqar attention=scaled,unscaled,mup8,unscaled_init train.prune.spare_seeds=3
train experiment=answer cell=adam_mqar attention=additive,qk_norm
train experiment=answer_wide cell=adam_mqar
confirm for_cell=adam_mqar n_seeds=8
confirm for_cell=adam_mqar stage=2

carry folder "$TEXT" "$RESULTS"  # stops here until the text cell's stage 2 has ended
train experiment=mup_width
python -m experiments.probe input_model=all 'seeds=[0,1,2]' 'd_ks=[2,4,8,16,32,64,128,256,512,1024]' \
  results_dir="$RESULTS"
python -m experiments.cost results_dir="$RESULTS"
cp "$REFERENCE/analysis.yaml" "$RESULTS/analysis.yaml"  # the study's primary condition, as the reference declares it
RESULTS="$RESULTS" bash "$(dirname "$0")/regenerate.sh"
