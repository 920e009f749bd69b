"""Milliseconds per Adam update of both players' variables: Keras's Adam against the fused one.

    python benchmarks/adam.py [--network=sngan_cnn] [--rounds=5] [--calls=20]

Builds the pair's G and D (float32 variables, as under every dtype policy), one
`keras.optimizers.Adam` and one `tf_fusedprop.optimizers.Adam` over all their trainable
variables, and times `apply_gradients` of fixed gradients inside a `tf.function`, the two in
interleaved rounds (median over the calls of a round, then over rounds). The header gives the
CPU and its flags.
"""

import statistics
import time

import keras
import machine  # noqa: F401  (first: sets oneDNN and TF's log level, puts the project first on sys.path)
import tensorflow as tf
from absl import app, flags

from tf_fusedprop import networks, optimizers

FLAGS = flags.FLAGS


def define_flags():
    """The command line's flags (defined when run, not when imported: other benchmarks define
    the same names)."""
    flags.DEFINE_string("network", "sngan_cnn", "Reference network pair (tf_fusedprop.networks.names()).")
    flags.DEFINE_integer("rounds", 5, "Interleaved rounds.")
    flags.DEFINE_integer("calls", 20, "Timed updates per optimizer per round.")


def update_functions(network):
    """`({name: tf.function() applying one update, returning a variable read after it}, the
    variables they update)`."""
    make_g, make_d = networks.get(network)
    variables = make_g().trainable_variables + make_d().trainable_variables
    grads = [tf.random.stateless_normal(v.shape, seed=[i, 0]) * 1e-3 for i, v in enumerate(variables)]
    functions = {}
    for name, cls in (
        ("keras.optimizers.Adam", keras.optimizers.Adam),
        ("tf_fusedprop.optimizers.Adam", optimizers.Adam),
    ):
        optimizer = cls(2e-4, beta_1=0.5)
        optimizer.build(variables)

        def update(optimizer=optimizer):
            optimizer.apply_gradients(zip(grads, variables))
            return variables[-1].value  # read after the update: the call waits for it

        functions[name] = tf.function(update)
    return functions, variables


def main(argv):
    del argv
    print(machine.header())
    functions, variables = update_functions(FLAGS.network)
    size = sum(int(tf.size(v)) for v in variables)
    print(f"network={FLAGS.network}: {len(variables)} variables, {size:,} parameters; ms per update of all of them")
    for fn in functions.values():
        fn(), fn()
    medians = {name: [] for name in functions}
    for _ in range(FLAGS.rounds):
        for name, fn in functions.items():
            times = []
            for _ in range(FLAGS.calls):
                start = time.perf_counter()
                fn().numpy()
                times.append(time.perf_counter() - start)
            medians[name].append(1e3 * statistics.median(times))
    result = {name: statistics.median(m) for name, m in medians.items()}
    for name, ms in result.items():
        print(f"{name:30s} {ms:7.2f} ms (rounds: {' '.join(f'{m:.2f}' for m in medians[name])})")
    keras_ms, fused_ms = result.values()
    print(f"fused / keras: {fused_ms / keras_ms:.2f} ({keras_ms - fused_ms:.1f} ms saved per step)")


if __name__ == "__main__":
    define_flags()
    app.run(main)
