"""Seconds per G update of `fit` as the calls of its train function cut the updates: one step a
call against `steps_per_execution` steps, for a form and for a periodic mix of forms; and what
`Auto`'s reading of D's logit gap adds to the form.

    python benchmarks/fit_calls.py --config=configs/ring8.py [--every=4] [--calls=20]
                                   [--updates=200] [--rounds=3] [--config.key=value]

Each row is the GAN that `train.py` builds from the config (`train_lib.build_gan`), fitted on
8 batches of the config's own pipeline (kept in memory and repeated, so that only the calls are
timed) for `--updates` G updates a round, every row once a round in
interleaved rounds after an untimed fit that traces it (the median over rounds is shown, the
rounds beside it; Keras's `fit` with no callbacks but the clock's, what a call costs included).
The clock is the epoch time `train.py` reports (`callbacks.Throughput`), not one around the `fit`
call: a `fit` ends by deleting its dataset iterator, which waits for tf.data's autotuning thread
to wake (it sleeps 10 ms, then 20, 40... from the iterator's start: measured here, `fit`s of
~1.8 s of training returned after 2.548 s or 5.108 s), a cost of each `fit` call, which a run
pays once, not of its calls:

| row | form | G updates a call |
|---|---|---|
| `fused x calls` | the config's simultaneous form (`--form`) | `--calls` (Keras's own loop) |
| `alternating x calls` | AltGD | `--calls` |
| `fused x 1` | the form | 1: a host round trip per update |
| `periodic x 1` | `Periodic(form, every)` | 1: a host round trip per update, as a mix ran before its period was traced |
| `periodic x calls` | `Periodic(form, every)` | `--calls`: whole periods traced as one function (`tf_fusedprop.train_functions`) |
| `form+gap x calls` | `Auto(form, signal="logit_gap")` reading every update, never alternating (`GAP_READING`) | `--calls` |

The last lines compare the mix with what the time-to-quality harness models it from
(`((every - 1) x fused + alternating) / every`, both at `--calls` a call) and the two ways of
calling it, and the form with the gap read against the form alone. The header gives the CPU and
its flags.
"""

import statistics

import keras
import machine  # noqa: F401  (first: sets oneDNN and TF's log level, puts the project first on sys.path)
import own_flags
import speed
from absl import app, flags
from ml_collections import config_flags


def define_flags(values=flags.FLAGS, argv=None):
    """The flags (defined when run, not when imported: other benchmarks define the same names)."""
    flags.DEFINE_string("form", "fused", "The simultaneous form of the mix.", flag_values=values)
    flags.DEFINE_integer("every", 4, "The mix's period: one alternating update in every `every`.", flag_values=values)
    flags.DEFINE_integer("calls", 20, "G updates per call of the multi-step rows.", flag_values=values)
    flags.DEFINE_integer("updates", 200, "Timed G updates per row per round.", flag_values=values)
    flags.DEFINE_integer("rounds", 3, "Interleaved rounds.", flag_values=values)
    config_flags.DEFINE_config_file(
        "config", None, "A train.py config (configs/<name>.py[:variant]).", flag_values=values, sys_argv=argv
    )


#: `config.auto` of the `form+gap` row: `Auto` on D's logit gap, read on every update (its
#: highest rate), a decision every 10 readings, a threshold no gap reaches: what the reading
#: costs, without the alternating updates it would ask for (`hold`, which must cover a call,
#: is `--calls`).
GAP_READING = {"signal": "logit_gap", "threshold": 1e9, "every": 1, "window": 10}


def rows(values):
    """The rows of the table for `values` (the flags): `(name, form, alternate_every or 0,
    G updates a call, config.auto or None)`."""
    return [
        (f"{values.form} x {values.calls}", values.form, 0, values.calls, None),
        (f"alternating x {values.calls}", "alternating", 0, values.calls, None),
        (f"{values.form} x 1", values.form, 0, 1, None),
        ("periodic x 1", values.form, values.every, 1, None),
        (f"periodic x {values.calls}", values.form, values.every, values.calls, None),
        (f"{values.form}+gap x {values.calls}", values.form, 0, values.calls, {**GAP_READING, "hold": values.calls}),
    ]


def fitter(config, data, form, every, calls, updates, auto=None):
    """`fit_once()`: the epoch time (`callbacks.Throughput`) of a `fit` of the GAN train.py
    builds from `config` with `form` (a periodic mix with `every` > 0; under `Auto` with `auto`,
    fields of `config.auto`) for `updates` G updates in calls of `calls`, on `config`'s pipeline;
    traced by a first untimed fit here."""
    from tf_fusedprop.experiment import callbacks, train_lib

    config = config.copy_and_resolve_references()
    config.update(form=form, warmup=0, alternate_every=every, steps_per_execution=calls)
    config.auto.update(auto or {"threshold": 0.0})
    keras.utils.set_random_seed(config.seed)
    gan = train_lib.build_gan(config, network_inputs=data.network_inputs)
    # A few batches kept in memory: each fit starts a new iterator, and the pipeline's own start
    # (a shuffle buffer filled again) would be timed with the calls it is not about.
    pipeline = data.pipeline(config.seed).take(8).cache().repeat()

    def fit_once(steps=updates):
        clock = callbacks.Throughput()
        gan.fit(pipeline, steps_per_epoch=steps, epochs=1, verbose=0, shuffle=False, callbacks=[clock])
        return clock.seconds

    fit_once(2 * calls * every if every else 2 * calls)
    return fit_once


def measure(values):
    """Prints the table for `values` (the flags); returns `{row: median seconds per update}`."""
    if values.config is None:
        raise app.UsageError("--config is required (e.g. --config=configs/ring8.py)")
    if values.every < 2 or values.calls % values.every or values.updates % values.calls or values.rounds < 1:
        raise app.UsageError(
            "--every >= 2, --calls a multiple of --every (calls of whole periods), --updates a multiple of "
            "--calls and --rounds >= 1"
        )
    print(machine.header())
    config, data = speed.completed_config(values.config)
    table = rows(values)
    print(
        f"config={config.name} (network {config.network}, batch {config.batch_size}, precision "
        f"{config.mixed_precision}); {values.updates} G updates a row a round, {values.rounds} rounds; ms per update"
    )
    fits = {
        name: fitter(config, data, form, every, calls, values.updates, auto) for name, form, every, calls, auto in table
    }
    seconds = {name: [] for name in fits}
    for _ in range(values.rounds):
        for name, fit_once in fits.items():
            seconds[name].append(fit_once() / values.updates)
    result = {name: statistics.median(s) for name, s in seconds.items()}
    for name, s in result.items():
        print(f"{name:24s} {1e3 * s:8.3f} ms (rounds: {' '.join(f'{1e3 * r:.3f}' for r in seconds[name])})")
    form, alternating, one, mix_one, mix, gap = (result[name] for name, *_ in table)
    modelled = ((values.every - 1) * form + alternating) / values.every
    print(f"{values.form} x 1 / {values.form} x {values.calls}: {one / form:.3f}")
    print(f"periodic x 1 / modelled: {mix_one / modelled:.3f}")
    print(f"periodic x {values.calls} / modelled: {mix / modelled:.3f}")
    print(f"periodic x 1 / periodic x {values.calls}: {mix_one / mix:.3f}")
    print(f"{values.form}+gap x {values.calls} / {values.form} x {values.calls}: {gap / form:.3f}")
    return result


def run(argv):
    """The benchmark from Python: `argv` (program name first, `--config` overrides included)
    parsed into flags of its own; prints what the command line prints, returns `measure`'s."""
    return measure(own_flags.parse(lambda values: define_flags(values, argv), argv))


def main(argv):
    """The command line's entry (absl's `app.run`)."""
    del argv
    measure(flags.FLAGS)


if __name__ == "__main__":
    define_flags()
    app.run(main)
