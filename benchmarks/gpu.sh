#!/usr/bin/env bash
# The GPU measurements of benchmarks/speed.py in one go, for a machine with an NVIDIA GPU:
# float32 and mixed_bfloat16, each with XLA off and on, every form side by side; then the
# paper's PyTorch code (../shared/peer) on the same GPU if its harness and a CUDA torch are there.
#
#   bash benchmarks/gpu.sh [OUT_DIR]          # from the project root; OUT_DIR defaults to $OUT or runs/gpu
#
# Needs: nvidia-smi, and a Python (PYTHON, default python3) with TensorFlow built for CUDA
# (`pip install "tensorflow[and-cuda]"`) and this project's dependencies. It prints what it
# finds and stops with one line when something is missing, so that a short device lease is not
# wasted. Every result is a JSON line appended to OUT_DIR/gpu.jsonl, the full logs beside it.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR="${1:-${OUT:-runs/gpu}}"
PYTHON="${PYTHON:-python3}"
ROUNDS="${ROUNDS:-5}"
mkdir -p "$OUT_DIR"
log() { echo "[gpu.sh $(date +%H:%M:%S)] $*" | tee -a "$OUT_DIR/gpu.log"; }

command -v nvidia-smi >/dev/null || { log "no nvidia-smi: not a GPU machine"; exit 2; }
nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv | tee "$OUT_DIR/nvidia-smi.csv"
if ! "$PYTHON" - >"$OUT_DIR/tf.txt" 2>&1 <<'EOF'
import tensorflow as tf
gpus = tf.config.list_physical_devices("GPU")
print("tensorflow", tf.__version__, "gpus", gpus)
assert gpus, "TensorFlow sees no GPU"
EOF
then
  log "TensorFlow with CUDA is not usable with $PYTHON ($(tail -n 1 "$OUT_DIR/tf.txt")); install tensorflow[and-cuda] or set PYTHON"
  exit 2
fi
log "$(cat "$OUT_DIR/tf.txt")"
"$PYTHON" -c "import tf_fusedprop.precision as p; print('precision auto:', p.choose('auto'))" | tee -a "$OUT_DIR/gpu.log"

for precision in "" "--mixed_precision"; do
  for xla in "" "--jit_compile"; do
    name="speed${precision:+-bf16}${xla:+-xla}"
    log "benchmarks/speed.py $precision $xla"
    "$PYTHON" benchmarks/speed.py --rounds="$ROUNDS" --steps_per_round=10 --warmup_steps=5 $precision $xla \
      >"$OUT_DIR/$name.log" 2>&1 || log "FAILED: $name (see $name.log)"
    grep '^{' "$OUT_DIR/$name.log" | tail -n 1 >>"$OUT_DIR/gpu.jsonl"
    grep -A8 '^median over rounds' "$OUT_DIR/$name.log" | tee -a "$OUT_DIR/gpu.log"
  done
done

if [ -f ../shared/peer/run.sh ] && "$PYTHON" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  log "peer harness: the paper's PyTorch code on this GPU is not wired to CUDA by run.sh (it times CPU torch); skipped"
else
  log "peer harness not run (no ../shared/peer or no CUDA torch)"
fi
log "done: $OUT_DIR/gpu.jsonl"
