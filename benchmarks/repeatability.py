"""Whether one training step repeats bit for bit: SNGAN's pair, fitted again and again from one state.

    python benchmarks/repeatability.py [--sizes=32,64,128] [--forms=fused,alternating]
        [--dtypes=mixed_bfloat16,float32] [--repeats=4] [--updates=2]
    TF_NUM_INTEROP_THREADS=0 python benchmarks/repeatability.py ...   # TensorFlow's default threads

Each (size, form, dtype) runs in a fresh process: SNGAN's generator and discriminator at the
widths `configs/images.py` trains at that size (`networks.sngan.default_widths`, or
`--generator_width`/`--discriminator_width`), batch 64, `FusedPropGAN` with the fused Adam of
`train.py`, one `fit` update to build everything, its whole state saved, then `--repeats` times:
the state restored and `--updates` updates fitted, the weights digested. A line per case gives
the number of distinct digests (1: it repeats) and the digests. The header (from the first
case's process) gives the machine and the inter-op threads (`benchmarks/machine.py` sets one,
as `train.py` does, unless the environment says otherwise: docs/guide.md#same-seed-same-run).
"""

import argparse
import json
import os
import subprocess
import sys

#: One case, in its own process: argv is size, form, dtype, repeats, updates, G width, D width.
_CASE = """
import hashlib, json, sys
sys.path.insert(0, "benchmarks")
import machine  # train.py's TensorFlow environment
import keras
import numpy as np
import tf_fusedprop as fp
from tf_fusedprop import networks, optimizers
size, form, dtype, repeats, updates, g_width, d_width = sys.argv[1:]
size, repeats, updates = int(size), int(repeats), int(updates)
widths = [int(w) or default for w, default in zip((g_width, d_width), networks.sngan.default_widths(size))]
keras.utils.set_random_seed(0)
g = networks.sngan.cnn_generator(128, widths[0], 3, dtype=dtype, image_size=size)
d = networks.sngan.cnn_discriminator((size, size, 3), widths[1], dtype=dtype, bottom=4)
gan = fp.FusedPropGAN(g, d, loss="nonsaturating", form=form, seed=0)
adam = [optimizers.Adam(2e-4, beta_1=0.0) for _ in range(2)]
gan.compile(d_optimizer=adam[0], g_optimizer=adam[1])
real = np.random.default_rng(1).uniform(-1, 1, size=(64 * updates, size, size, 3)).astype("float32")
gan.fit(real[:64], batch_size=64, epochs=1, verbose=0, shuffle=False)
state = gan.variables + adam[0].variables + adam[1].variables
saved = [v.numpy() for v in state]
digests = []
for _ in range(repeats):
    for variable, value in zip(state, saved):
        variable.assign(value)
    gan.fit(real, batch_size=64, epochs=1, verbose=0, shuffle=False)
    weights = b"".join(np.asarray(w).tobytes() for w in g.weights + d.weights)
    digests.append(hashlib.sha256(weights).hexdigest()[:8])
print(json.dumps({"header": machine.header(), "widths": widths, "digests": digests}))
"""


def run_case(size, form, dtype, repeats, updates, widths):
    """One case in a fresh process (`widths` 0: `configs/images.py`'s): `{"header", "widths", "digests"}`."""
    result = subprocess.run(
        [sys.executable, "-c", _CASE, str(size), form, dtype, str(repeats), str(updates), *map(str, widths)],
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        capture_output=True,
        text=True,
    )
    if result.returncode:
        sys.exit(f"case {size} px {form} {dtype} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="32,64,128")
    parser.add_argument("--forms", default="fused,alternating")
    parser.add_argument("--dtypes", default="mixed_bfloat16,float32")
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--updates", type=int, default=2)
    parser.add_argument("--generator_width", type=int, help="default: the width configs/images.py trains")
    parser.add_argument("--discriminator_width", type=int, help="default: the width configs/images.py trains")
    args = parser.parse_args()
    cases, widths = {}, (args.generator_width or 0, args.discriminator_width or 0)
    for size in map(int, args.sizes.split(",")):
        for form in args.forms.split(","):
            for dtype in args.dtypes.split(","):
                case = run_case(size, form, dtype, args.repeats, args.updates, widths)
                if not cases:
                    print(case["header"])
                    print(f"repeats={args.repeats} updates={args.updates} batch 64 (distinct digests; 1: bit for bit)")
                digests, (g_width, d_width) = case["digests"], case["widths"]
                cases[f"{size}px/{form}/{dtype}"] = digests
                print(
                    f"{size:>4} px  {form:<13} {dtype:<15} G {g_width:<4} D {d_width:<4} distinct "
                    f"{len(set(digests))}: {' '.join(digests)}",
                    flush=True,
                )
    print(json.dumps({"inter_op_threads": os.environ.get("TF_NUM_INTEROP_THREADS", "1"), "cases": cases}))


if __name__ == "__main__":
    main()
