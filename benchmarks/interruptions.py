"""A run stopped by SIGTERM at random moments and rerun each time, against the same run uninterrupted.

    python benchmarks/interruptions.py [--signals=10] [--seed=0] [--signal=SIGTERM] [-- TRAIN_PY_FLAGS...]

`train.py` (the default job unless flags are given) is started in a new workdir and sent the
signal `--signals` times, each at a moment drawn uniformly from 0 to 2 / signals of the
uninterrupted run's duration (measured first: the same command in another workdir) after the
process starts (start-up included, so that the stops spread over the whole run), the same
command rerun after each stop; then it is rerun until it finishes. Each stop is one line: when, the exit status, the line `train.py` printed. The last
lines compare the two runs: their final checkpoints (every weight, optimizer and seed-stream
variable) and their exported generators on 64 fixed latents, as the largest absolute
difference (0: bit for bit).
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

import machine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN = os.path.join(ROOT, "train.py")


def train(flags, workdir, stop_after=None, signum=signal.SIGTERM):
    """`train.py flags --workdir=workdir`; sent `signum` after `stop_after` seconds (None: never).
    Returns `(exit status, seconds, its stderr's last line)`."""
    start = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, TRAIN, *flags, f"--workdir={workdir}"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        process.wait(stop_after)
    except subprocess.TimeoutExpired:
        process.send_signal(signum)
    _, err = process.communicate()
    lines = [line for line in err.splitlines() if line.strip()]
    return process.returncode, time.monotonic() - start, lines[-1] if lines else ""


_COMPARE = """
import json, sys
import numpy as np
import tensorflow as tf
sys.path.insert(0, "tests")
from testing_utils import h5_arrays
from tf_fusedprop.experiment import files
runs = sys.argv[1:]
weights = []
for run in runs:
    meta = files.read_json(run + "/backup/checkpoint.json")
    weights.append(h5_arrays(run + "/backup/" + meta["weights"]))
names = sorted(weights[0])
assert names == sorted(weights[1]), "the checkpoints hold different variables"
weight_gap = max(float(np.max(np.abs(np.asarray(weights[0][n], np.float64) - np.asarray(weights[1][n], np.float64)), initial=0)) for n in names)
samples = []
for run in runs:
    generator = tf.saved_model.load(run + "/generator")
    latent = json.load(open(run + "/generator/fusedprop_export.json"))["latent_dim"]
    z = tf.random.stateless_normal([64, latent], seed=[1, 2])
    samples.append(np.asarray(generator.serve(z), np.float64))
print(json.dumps({"variables": len(names), "weights": weight_gap, "samples": float(np.max(np.abs(samples[0] - samples[1])))}))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--signals", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--signal", default="SIGTERM", choices=("SIGTERM", "SIGINT"))
    parser.add_argument("--workdir_root", default=None, help="where the two workdirs go (default: a new temporary one)")
    parser.add_argument("train_flags", nargs="*", help="train.py's flags (after --); none: the default job")
    args = parser.parse_args()
    signum = signal.Signals[args.signal]
    root = args.workdir_root or tempfile.mkdtemp(prefix="interruptions-")
    straight, stopped = os.path.join(root, "straight"), os.path.join(root, "stopped")
    print(machine.header())
    status, seconds, _ = train(args.train_flags, straight)
    if status:
        sys.exit(f"the uninterrupted run failed with status {status}")
    print(f"uninterrupted: {seconds:.0f} s, {straight}")
    draw = random.Random(args.seed)
    moments = [draw.uniform(0, 2 * seconds / args.signals) for _ in range(args.signals)]
    print(f"{args.signal} at: {', '.join(f'{m:.1f}' for m in moments)} s after each process starts", flush=True)
    for index, moment in enumerate(moments, 1):
        status, _, said = train(args.train_flags, stopped, stop_after=moment, signum=signum)
        print(f"  stop {index} after {moment:5.1f} s: exit {status}: {said}", flush=True)
        if status == 0:
            print("  (the run had finished)")
    reruns = 0
    while True:
        status, _, said = train(args.train_flags, stopped)
        reruns += 1
        if status == 0 or reruns > 3:
            break
    print(f"finished by the rerun: exit {status}")
    compared = subprocess.run(
        [sys.executable, "-c", _COMPARE, stopped, straight], cwd=ROOT, capture_output=True, text=True
    )
    if compared.returncode:
        sys.exit(compared.stderr[-3000:])
    result = json.loads(compared.stdout.strip().splitlines()[-1])
    print(
        f"largest difference over {result['variables']} checkpoint variables: {result['weights']:.3g}; "
        f"over 64 generated samples: {result['samples']:.3g}"
    )
    print(json.dumps({"moments": moments, **result}))


if __name__ == "__main__":
    main()
