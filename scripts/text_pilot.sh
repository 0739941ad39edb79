#!/usr/bin/env bash
# The text cell's pilot, behind its declarations in conf/analysis.yaml (tasks.charlm): scaled,
# unscaled and additive at d_k 16, lr 3e-3, on seeds 100-107 (never the study's), with the
# cell's model and budget; then each pair's paired sd of Δ accuracy AUC and TOST's power at
# 8 seeds. About 4 min on 2 cores.   RESULTS=/tmp/text_pilot bash scripts/text_pilot.sh
set -euo pipefail
RESULTS=${RESULTS:-results/text_pilot}
python -m experiments.train -m cell=adam_charlm attention=scaled,unscaled,additive d_k=16 seed=100 \
  train.n_seeds=8 'optimizer.lr_grid=[3e-3]' train.prune.enabled=false model.reassociate=true \
  train.batch_size=32 train.n_val=512 train.n_test=1024 train.eval_every=50 \
  logger=none results_dir="$RESULTS"
python - "$RESULTS" <<'PY'
import json, sys
from pathlib import Path
import pandas as pd
from experiments.analysis.stats.profile import tost_power
runs = pd.DataFrame([json.loads(p.read_text()) for p in Path(sys.argv[1]).glob("runs/*/summary.json")])
print(runs.groupby("attention")[["accuracy_auc", "final_val_bpc", "test_bpc"]].mean().round(3).to_string())
auc = runs.pivot_table(index="seed", columns="attention", values="accuracy_auc")
for a, b in (("scaled", "unscaled"), ("additive", "unscaled")):
    diff = auc[a] - auc[b]
    sd = diff.std(ddof=1)
    print(f"{a} - {b}: {diff.mean():+.4f}, paired sd {sd:.4f}; TOST power at 8 seeds, margin 0.015: "
          f"{tost_power(sd, 8, 0.015):.2f} at Δ = 0")
PY
