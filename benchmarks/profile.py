"""Where a training step spends its time, op by op: a TF profiler trace summed by op type.

    python benchmarks/profile.py [--network=sngan_cnn] [--forms=fused,alternating]
                                 [--batch_size=64] [--steps=5] [--mixed_precision=float32]
                                 [--top=25] [--trace_dir=DIR]

For each form, builds `FusedPropGAN` on the network pair (CIFAR-10 shapes), traces and warms up
`train_step` under `tf.function`, records `--steps` steps with `tf.profiler.experimental`, and
reads the host trace (`*.xplane.pb`): every TensorFlow op execution is an event whose name
ends in its op type. The table gives, per op type, milliseconds per step summed over threads
(so columns can exceed the step's wall time on a multi-core machine), the share of all op
time, and the number of executions per step; the header gives the wall time per step. Forms
are side by side, so where one step spends more than the other reads off one line.

It imports `tf_fusedprop` from the current directory first, so the same script profiles
another checkout: `PYTHONPATH=/path/to/checkout python benchmarks/profile.py`.
"""

import collections
import glob
import os
import tempfile
import time

import keras
import machine  # noqa: F401  (first: sets oneDNN and TF's log level, puts the project first on sys.path)
import numpy as np
import tensorflow as tf
from absl import app, flags
from tensorflow.tsl.profiler.protobuf import xplane_pb2

import tf_fusedprop as fp
from tf_fusedprop import networks

FLAGS = flags.FLAGS
flags.DEFINE_string("network", "sngan_cnn", "Reference network pair (tf_fusedprop.networks.names()).")
flags.DEFINE_list("forms", "fused,alternating", "Forms to profile, side by side.")
flags.DEFINE_integer("batch_size", 64, "Real and generated samples per step (each).")
flags.DEFINE_integer("steps", 5, "Profiled steps per form.")
flags.DEFINE_string("mixed_precision", "float32", "Keras dtype policy of both networks.")
flags.DEFINE_integer("top", 25, "Op types listed (by the first form's time).")
flags.DEFINE_string("trace_dir", None, "Keep the traces here (default: a temporary directory).")


def profiled_step(form, real):
    """`run(n)`: `n` steps of `form` on `--network` (Keras's Adam, `--mixed_precision`), then a wait."""
    make_g, make_d = networks.get(FLAGS.network)
    dtype = None if FLAGS.mixed_precision == "float32" else FLAGS.mixed_precision
    keras.utils.set_random_seed(0)
    gan = fp.FusedPropGAN(make_g(dtype=dtype), make_d(dtype=dtype), loss="nonsaturating", form=form, seed=0)
    gan.compile(
        d_optimizer=keras.optimizers.Adam(2e-4, beta_1=0.5), g_optimizer=keras.optimizers.Adam(2e-4, beta_1=0.5)
    )
    step = tf.function(gan.train_step)

    def run(n):
        for _ in range(n):
            logs = step(real)
        float(logs["d_loss"])

    return run


def op_times(trace_dir):
    """`{op type: (total microseconds, executions)}` of the TensorFlow ops in a host trace."""
    totals = collections.defaultdict(lambda: [0.0, 0])
    for path in glob.glob(os.path.join(trace_dir, "**", "*.xplane.pb"), recursive=True):
        space = xplane_pb2.XSpace()
        with open(path, "rb") as f:
            space.ParseFromString(f.read())
        for plane in space.planes:
            if not plane.name.startswith("/host:CPU"):
                continue
            names = {key: meta.name for key, meta in plane.event_metadata.items()}
            for line in plane.lines:
                if not line.name.startswith("tf_Compute"):  # the executor's threads run the ops
                    continue
                for event in line.events:
                    name = names.get(event.metadata_id, "")
                    if ":" not in name or "::" in name:  # ops are "op_name:OpType"; the rest is bookkeeping
                        continue
                    op_type = name.rsplit(":", 1)[1]
                    totals[op_type][0] += event.duration_ps / 1e6
                    totals[op_type][1] += 1
    return {key: tuple(value) for key, value in totals.items()}


def main(argv):
    del argv
    make_g, _ = networks.get(FLAGS.network)
    shape = make_g().output_shape[1:]
    real = tf.constant(np.random.default_rng(0).uniform(-1, 1, (FLAGS.batch_size,) + shape).astype("float32"))
    print(machine.header())
    print(
        f"network={FLAGS.network} batch={FLAGS.batch_size} precision={FLAGS.mixed_precision} steps={FLAGS.steps} "
        f"tf_fusedprop={os.path.dirname(fp.__file__)}"
    )
    root = FLAGS.trace_dir or tempfile.mkdtemp(prefix="fusedprop-profile-")
    results, walls = {}, {}
    for form in FLAGS.forms:
        run = profiled_step(form, real)
        run(3)
        trace_dir = os.path.join(root, form)
        tf.profiler.experimental.start(trace_dir)
        start = time.perf_counter()
        run(FLAGS.steps)
        walls[form] = (time.perf_counter() - start) / FLAGS.steps
        tf.profiler.experimental.stop()
        results[form] = op_times(trace_dir)
    first = FLAGS.forms[0]
    ops = sorted(set().union(*results.values()), key=lambda op: -results[first].get(op, (0, 0))[0])
    print("wall s/step: " + ", ".join(f"{form} {walls[form]:.3f}" for form in FLAGS.forms))
    print("op time per step summed over threads (ms), share of all op time, executions per step")
    print(f"{'op type':<34}" + "".join(f"{form:>30}" for form in FLAGS.forms))
    for op in ops[: FLAGS.top]:
        cells = []
        for form in FLAGS.forms:
            micros, count = results[form].get(op, (0.0, 0))
            total = sum(m for m, _ in results[form].values()) or 1.0
            cells.append(f"{micros / 1e3 / FLAGS.steps:10.1f} {100 * micros / total:5.1f}% {count / FLAGS.steps:7.1f}")
        print(f"{op:<34}" + "".join(f"{c:>30}" for c in cells))
    print(
        f"{'(all ops)':<34}"
        + "".join(
            f"{sum(m for m, _ in results[form].values()) / 1e3 / FLAGS.steps:10.1f}{'':>20}" for form in FLAGS.forms
        )
    )
    print(f"traces: {root}")


if __name__ == "__main__":
    app.run(main)
