#!/usr/bin/env bash
# The GPU checks of docs/gpu.md in one go, for a GPU host (also runs on CPU with SMALL=1):
#   benchmarks/gpu_checks.sh env tests bench runs resume cartography lineup pack
# Steps run in the order given; each logs to $OUT/<step>.log and prints a summary.
#   OUT=folder for logs and figures (default gpu-out)   WORK=scratch (default /tmp/nli-gpu)
#   NLI_SHARED_DATA=folder holding nli/scinli-*.jsonl   SMALL=1: tiny model and sizes (a CPU dry run)
#   bench: VARIANTS=names or all (run once each), IN_ROUNDS=names run in every round beside HF and ours
#   resume: REPS=copies of the training file (default 10); DETERMINISTIC=1 adds --deterministic
set -uo pipefail
OUT=${OUT:-gpu-out}
WORK=${WORK:-/tmp/nli-gpu}
PY=${PYTHON:-python3}
SMALL=${SMALL:-0}
mkdir -p "$OUT" "$WORK"
OUT=$(cd "$OUT" && pwd)
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
export NLI_SHARED_DATA=${NLI_SHARED_DATA:-$PWD/../shared/data}
DATA=$NLI_SHARED_DATA/nli
TRAIN=$DATA/scinli-train-2k-human.jsonl
DEV=$DATA/scinli-dev.jsonl
BERT=$WORK/bert-base
if [ "$SMALL" = 1 ]; then
  SIZE=tiny; EPOCHS=2; SEEDS=2; REPS=2; BENCH="--pairs 3000 --steps 12 --warmup 2 --batch-size 16 --rounds 1"
else
  SIZE=base; EPOCHS=${EPOCHS:-6}; SEEDS=3; REPS=${REPS:-10}; BENCH="--pairs 50000 --steps 400 --warmup 50 --batch-size 32 --rounds 3"
fi
COMMON=(--premise sentence1 --hypothesis sentence2 --model transformer --pretrained "$BERT" --batch-size 32
        --lr 5e-5 --max-length 128 --no-progress)

stamp() { echo "[$(date -u +%H:%M:%S)] $*"; }

build_model() {
  [ -f "$BERT/config.json" ] && return 0
  stamp "building BERT-$SIZE from a config in $BERT"
  $PY - "$BERT" "$SIZE" "$TRAIN" "$DEV" <<'EOF'
import sys
from pathlib import Path
sys.path.insert(0, "benchmarks")
import pandas as pd
from train_throughput import SIZES
from trainer.models.transformer import build_untrained_bert
folder, size, files = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
texts = []
for f in files:
    df = pd.read_json(f, lines=True)
    texts += df["sentence1"].astype(str).tolist() + df["sentence2"].astype(str).tolist()
hidden, layers, heads, inter = SIZES[size]
build_untrained_bert(folder, list(dict.fromkeys(texts)), tokenizer_vocab=30522, config_vocab=30522, hidden=hidden,
                     layers=layers, heads=heads, intermediate=inter, max_positions=512, seed=0)
print(f"BERT-{size} {SIZES[size]} saved in {folder}")
EOF
}

step_env() {
  nvidia-smi || true
  $PY -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available()); print('transformers', transformers.__version__); print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU'); print('bf16', torch.cuda.is_available() and torch.cuda.is_bf16_supported()); print('nccl', torch.distributed.is_nccl_available(), 'gloo', torch.distributed.is_gloo_available(), 'gpus', torch.cuda.device_count())"
  nproc
}

step_tests() {
  # every trainer test, the device placed on CUDA where a test allows it (NLI_TEST_DEVICE)
  NLI_TEST_DEVICE=cuda timeout ${TESTS_TIMEOUT:-420} $PY -m pytest -q -rs -p no:cacheprovider -s \
    tests/test_trainer_cuda.py tests/test_trainer_transformer.py tests/test_decoder_models.py tests/test_ddp.py \
    tests/test_trainer_baselines.py tests/test_cartography_real_run.py tests/test_cartography_metrics.py \
    tests/test_curriculum_schedules.py tests/test_compare_significance.py tests/test_experiment_lineup.py \
    tests/test_trainer_data.py 2>&1 | grep -v "Loading weights\|Writing model shards\|LOAD REPORT\|^Key \|^---\|MISSING\|^Notes\|newly initialized\|^classifier\|^score\|^$"
}

step_bench() {
  $PY benchmarks/train_throughput.py --size $SIZE $BENCH --variants "${VARIANTS:-all}" --in-rounds "${IN_ROUNDS:-}" --json "$OUT/throughput.json"
}

step_runs() {
  build_model
  for enc in cross separate; do
    stamp "train --encoding $enc --seeds $SEEDS"
    $PY -m trainer train --train "$TRAIN" --validation "$DEV" --test "$DEV" \
      "${COMMON[@]}" --encoding $enc --seeds $SEEDS --epochs $EPOCHS --patience 3 --output "$WORK/runs/$enc" --overwrite \
      2>&1 | grep -v "Loading weights\|Writing model\|LOAD REPORT\|^Key\|^---\|MISSING\|^Notes\|newly init\|^classifier\|^$"
    $PY - "$WORK/runs/$enc" <<'EOF'
import json, sys
from pathlib import Path
run = Path(sys.argv[1])
s = json.loads((run / "seeds.json").read_text())
for seed, m in s["runs"].items():
    c = json.loads((run / f"seed_{seed}" / "config.json").read_text())
    print(f"seed {seed}: dev accuracy {m['scinli-dev']['accuracy']:.4f} macro-F1 {m['scinli-dev']['macro_f1']:.4f}; "
          f"best epoch {c['best_epoch']} of {len(c['history'])}; train {c['train_seconds']:.1f}s on {c['device']}; "
          f"dynamics {100 * c['dynamics']['share']:.1f}% of training time")
print(f"selected seed {s['selected_seed']}; mean ± std: " + "; ".join(
    f"{k} {s['mean']['scinli-dev'][k]:.4f} ± {s['std']['scinli-dev'][k]:.4f}" for k in ("accuracy", "macro_f1")))
EOF
  done
}

step_resume() {
  build_model
  big=$WORK/scinli-train-x$REPS.jsonl
  $PY -c "
import pandas as pd, sys
df = pd.read_json('$TRAIN', lines=True)
big = pd.concat([df.assign(id=df['id'].astype(str) + f'_copy{k}') for k in range($REPS)], ignore_index=True)
big.to_json('$big', orient='records', lines=True)  # ids stay unique
print(len(df) * $REPS, 'training rows')"
  args=(--train "$big" --validation "$DEV" --test "$DEV" "${COMMON[@]}" --encoding cross --epochs 3 --patience 0 --seed 7
        ${DETERMINISTIC:+--deterministic})
  rm -rf "$WORK/resume-ref" "$WORK/resume-ref.inprogress" "$WORK/resume" "$WORK/resume.inprogress"
  mkdir -p "$WORK/logs"
  stamp "uninterrupted reference run"
  $PY -m trainer train "${args[@]}" --output "$WORK/resume-ref" > "$WORK/logs/resume-ref.log" 2>&1 || { echo "reference failed"; tail "$WORK/logs/resume-ref.log"; return 1; }
  stamp "run to be killed"
  $PY -m trainer train "${args[@]}" --output "$WORK/resume" > "$WORK/logs/resume-killed.log" 2>&1 &
  pid=$!
  stage=$WORK/resume.inprogress
  for _ in $(seq 1200); do
    [ -f "$stage/checkpoint/state.pt" ] && grep -q "epoch 0:" "$stage/train.log" 2>/dev/null && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.25
  done
  epoch_s=$(grep -o "epoch 0: .*seconds=[0-9.]*" "$stage/train.log" | grep -o "seconds=[0-9.]*" | cut -d= -f2)
  half=$($PY -c "print(max(0.5, float('${epoch_s:-2}') * 0.5))")
  stamp "epoch 0 took ${epoch_s}s; SIGKILL in ${half}s (mid-epoch; the checkpoint below says which epoch finished last)"
  sleep "$half"
  kill -9 $pid 2>/dev/null && stamp "killed pid $pid"
  wait $pid; echo "exit status of the killed run: $?"
  $PY -c "
import torch
s = torch.load('$stage/checkpoint/state.pt', map_location='cpu', weights_only=False)
print('checkpoint at kill: epoch', s['epoch'], 'global step', s['global_step'])"
  grep -c "^" "$stage/train.log" > /dev/null && tail -2 "$stage/train.log"
  stamp "--resume"
  $PY -m trainer train "${args[@]}" --output "$WORK/resume" --resume > "$WORK/logs/resume-resumed.log" 2>&1 || { echo "resume failed"; tail "$WORK/logs/resume-resumed.log"; return 1; }
  grep "resumed from" "$WORK/resume/train.log"
  $PY - "$WORK/resume-ref" "$WORK/resume" <<'EOF'
import json, sys
from pathlib import Path
import numpy as np, pandas as pd
ref, res = Path(sys.argv[1]), Path(sys.argv[2])
a, b = pd.read_parquet(ref / "predictions.parquet"), pd.read_parquet(res / "predictions.parquet")
cols = [c for c in a.columns if c.startswith("prob_")]
ha = json.loads((ref / "config.json").read_text())["history"]
hb = json.loads((res / "config.json").read_text())["history"]
print("epochs (reference / resumed):", [h["epoch"] for h in ha], [h["epoch"] for h in hb])
for x, y in zip(ha, hb):
    print(f"epoch {x['epoch']}: train loss {x['train_loss']:.5f} / {y['train_loss']:.5f}; "
          f"validation macro-F1 {x['validation_macro_f1']:.4f} / {y['validation_macro_f1']:.4f}")
ma = json.loads((ref / "metrics.json").read_text())["scinli-dev"]
mb = json.loads((res / "metrics.json").read_text())["scinli-dev"]
print(f"dev accuracy {ma['accuracy']:.4f} / {mb['accuracy']:.4f}; macro-F1 {ma['macro_f1']:.4f} / {mb['macro_f1']:.4f}")
print(f"largest probability difference {np.abs(a[cols].to_numpy() - b[cols].to_numpy()).max():.2e}; "
      f"same predicted label on {(a['pred'] == b['pred']).mean():.4f} of rows")
EOF
}

step_cartography() {
  $PY -m trainer cartography "$WORK/runs/cross" && cat "$WORK/runs/cross/cartography/groups.md" 2>/dev/null | head -20
  cp "$WORK/runs/cross/cartography/data_map.png" "$OUT/data_map_cross.png" 2>/dev/null || true
}

step_lineup() {
  build_model
  sed -e "s#\.\./shared/data#$NLI_SHARED_DATA#g" -e "s#^\(  pretrained:\).*#\1 $BERT#" \
      -e "s#^out:.*#out: $WORK/lineup#" examples/lineup-bert-gpu.yaml > "$WORK/lineup.yaml"
  [ "$SMALL" = 1 ] && sed -i -e "s#^seeds:.*#seeds: 2#" -e "s#^\(  epochs:\).*#\1 2#" "$WORK/lineup.yaml"
  $PY -m trainer experiment "$WORK/lineup.yaml" ${LINEUP_SEEDS:+--seeds $LINEUP_SEEDS} ${LINEUP_ONLY:+--only $LINEUP_ONLY} 2>&1 | grep -v "Loading weights\|Writing model\|LOAD REPORT\|^Key\|^---\|MISSING\|^Notes\|newly init\|^classifier\|^$" | tail -40
  cat "$WORK/lineup/results.md"
}

step_pack() {
  tar czf "$OUT/runs.tgz" -C "$WORK" --exclude='model' --exclude='checkpoint' --exclude='*.pt' \
      --exclude='bert-base' --exclude='*.jsonl' --exclude='predictions.parquet' --exclude='dynamics' \
      $(cd "$WORK" && ls -d runs lineup resume resume-ref logs 2>/dev/null)
  ls -la "$OUT"
}

for step in "$@"; do
  stamp "== $step"
  t0=$(date +%s)
  "step_$step" 2>&1 | tee "$OUT/$step.log"
  stamp "== $step done in $(( $(date +%s) - t0 ))s"
done
