#!/usr/bin/env bash
# Issue 32's go/no-go: a current oneDNN (the `onednn` wheel) against TensorFlow's convolutions.
#
#   bash benchmarks/onednn/run.sh [REPS]     # run from the repository root, on a quiet machine
#
# Installs the `onednn` and `onednn-devel` wheels (oneDNN 3.13 in 2026.1: a SYCL build whose CPU
# engine runs through Intel's OpenCL CPU runtime, which the wheels bring; ~2 GB) into a venv of
# their own under $ONEDNN_HOME (default ~/.cache/tf_fusedprop/onednn), builds with g++
# `passes` (oneDNN alone: the three passes of SNGAN D's convolutions) and `weight_gradient_op.so`
# (a TensorFlow op: one convolution's weight gradient), then prints oneDNN's passes and, in one
# TensorFlow process, the op beside the package's weight-gradient formulations and TensorFlow's own
# three passes on the shapes of `passes` (onednn_vs_tf.py).
# Nothing here is used by the package; docs/performance.md gives the result.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
REPS="${1:-9}"
ONEDNN_HOME="${ONEDNN_HOME:-$HOME/.cache/tf_fusedprop/onednn}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
BUILD="$ONEDNN_HOME/build"
if [ ! -x "$ONEDNN_HOME/venv/bin/python" ]; then
  python3 -m venv "$ONEDNN_HOME/venv"
  "$ONEDNN_HOME/venv/bin/pip" install -q onednn onednn-devel
fi
LIB="$ONEDNN_HOME/venv/lib"
INCLUDE="$ONEDNN_HOME/venv/include"
mkdir -p "$BUILD"
g++ -O2 -std=c++17 "$HERE/passes.cc" -I"$INCLUDE" -L"$LIB" -Wl,-rpath-link,"$LIB" -ldnnl -o "$BUILD/passes"
read -r -a TF_CFLAGS <<<"$("$PYTHON" -c 'import tensorflow as tf; print(" ".join(tf.sysconfig.get_compile_flags()))' 2>/dev/null)"
read -r -a TF_LFLAGS <<<"$("$PYTHON" -c 'import tensorflow as tf; print(" ".join(tf.sysconfig.get_link_flags()))' 2>/dev/null)"
g++ -O2 -std=c++17 -shared -fPIC -w "$HERE/weight_gradient_op.cc" -o "$HERE/weight_gradient_op.so" \
  "${TF_CFLAGS[@]}" -I"$INCLUDE" "${TF_LFLAGS[@]}" -L"$LIB" -Wl,-rpath-link,"$LIB" -ldnnl
# The wheels' libraries find each other only through the loader's path; the SYCL runtime finds
# the CPU device through the OpenCL ICD named here.
export LD_LIBRARY_PATH="$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OCL_ICD_FILENAMES="$LIB/libintelocl.so"
"$BUILD/passes" "$REPS"
"$PYTHON" "$HERE/onednn_vs_tf.py" "$REPS"
