"""Time-to-quality: sample quality against training seconds and G updates, per form, over seeds.

    python benchmarks/quality.py                 # the full grid (80 runs, ~1 h on 2 CPU cores)
    python benchmarks/quality.py --quick         # a reduced grid (QUICK, QUICK_SEEDS): ~4 min
    python benchmarks/quality.py --report_only   # rewrite results.md and quality.png from results.json
    python benchmarks/quality.py --tasks=ring8 --losses=nonsaturating --forms=fused --seeds=5 \\
        --override=g_lr=5e-4 --out=runs/quality_glr  # an investigation: any config field changed
    python benchmarks/quality.py --tasks=digits32 --forms=alternating,fused --seeds=3 \\
        --out=benchmarks/results/quality_plateau --seconds_per_update=alternating=0.35,fused=0.27
        # image GANs at SNGAN widths: ~30-40 min a run; the finished runs are kept in the repository
    python benchmarks/quality.py --tasks=mnist --forms=fused --seeds=3 --only_seeds=2 --out=DIR
        # one seed of a three-seed grid now (a run of hours, one a session); the same command with
        # --only_seeds=0, 1 later (or on another machine, given DIR's results.json) fills it in

Every run is `train_lib.train(config, workdir)` on the config of `configs/<task>.py` with only
`loss`, `form` and `seed` changed (`--quick`: also the steps and evaluation sizes of `QUICK`;
`--override`: what it says), so every form makes the config's number of G updates. Grid:

* ring8, grid25 (modes covered, high-quality samples) and digits (FID, KID under the package's
  digits classifier), nonsaturating loss, forms alternating (n_dis 1), fused, inverse,
  adaptive and simultaneous; ring8 also with the hinge loss (alternating, inverse, adaptive);
* 5 seeds (0-4) on the 2-D tasks, 3 on digits;
* on request (`--tasks`), the image GANs at SNGAN's widths (issue 30): mnist (`configs/mnist.py`)
  and digits32 (`configs/digits32.py`), 3 seeds, trained until alternating's FID plateaus; and
  mnist64 (`configs/mnist64.py`: `configs/images.py`'s defaults at 64 px, issue 48).

Runs go one after another in this process (the Keras session cleared between them; a
subprocess each would pay TensorFlow's import, ~4 s, 80 times), after an untimed warm-up run
per task (first tracing, the digits classifier), in seed-major order: every form of seed 0,
then of seed 1..., so machine noise hits all forms alike. Per run, `results.json` keeps the metrics after every evaluation with their G update
and training seconds (epoch time, evaluation, sample grids and checkpoints excluded; the first
epoch includes tracing) from the run's `summary.json` `history`, and whether and where the run
diverged: a run whose losses become non-finite is counted (`diverged`), its metrics from then
on are null. Under `--out` (default `runs/quality/`, `runs/quality_quick/` with `--quick`):

| path | what |
|---|---|
| `results.json` | `environment`, `grid`, and `runs`: one record per run, rewritten after every run |
| `results.md` | per (task, loss, form): final metrics (mean +- std), divergences, time to threshold; on the image GANs also the best evaluation, where it came, how far the mean moved over the last fifth (the plateau test), and where the mean curve over seeds meets the threshold |
| `quality.png` | per task: metric vs training seconds (top; modelled ones with `--seconds_per_update`) and vs G updates (bottom), mean +- std |
| `runs/<task>-<loss>-<form>-s<seed>/` | each run's workdir (`train.py`'s layout); `train.log` its output |

Resumable: a rerun skips the runs that `results.json` holds with the same config (done or
diverged; a run that failed otherwise is retried), and restarts an unfinished run from
scratch (a resumed run would retrace, and its training seconds would restart: its time would
not compare), except on the image GANs (mnist, digits32, mnist64), whose unfinished run resumes from its last
checkpoint (time there is modelled, below). Ctrl-C or SIGTERM stops the grid in one line (the
run's checkpoint kept, the finished runs in `results.json`, exit 130 / 143). A `results.json` that holds a run of another config
(e.g. `configs/` changed) is refused: pass another `--out`. Seeds of one grid may be trained
across sessions and machines: each record names its machine (results.md counts the runs per
machine when there is more than one). `benchmarks/results/` keeps finished grids in the
repository (results.json, results.md, quality.png; not their workdirs): rerun a grid's command
with its `--out` on a fresh checkout and only the missing runs train (docs/quality.md names each
grid and its command). On the image GANs a grid's schedule can be lengthened without
retraining: rerun with a larger `--override=steps=N` and the same `--out`, and each finished run
trains on from its last checkpoint (`lengthened`; `train.py`'s longer schedule). `--reference=DIR`
reports another grid's runs of the same tasks and seeds beside this one's, cut at its schedule.

The code: `benchmarks/time_to_quality/`, a library (its docstring lists its modules: `grid`
owns a grid's plan, its resume policy and its files); this file is its command line: the flags
and their one-line errors, the signals, and the progress it prints.

Stabilizers (`--stabilizers`, `--define_stabilizer`): named changes of the shipped config
(`STABILIZERS`), each a row per form, alternating included; the ratio "vs alternating" is
always against alternating at the shipped defaults. E.g.
`--stabilizers=defaults,lookahead10 --define_stabilizer=la20:lookahead.every=20,lookahead.alpha=0.5`.

Thresholds (time to reach; the first evaluation that meets it): ring8, 8/8 modes with >= 80%
high-quality samples; grid25, >= 24/25 modes; digits, FID <= 8 (about twice the final FID of
a 3,600-step run; reached in the first third of a run); the image GANs, near the plateau:
FID <= 1.1x alternating's mean final FID in the same results.

Modelled time (`--seconds_per_update=FORM=S,...`, or `TASK/FORM=S`): a loaded machine changes
the wall-clock, not the G updates, so the report also gives, per row, time = G updates x the
form's seconds per update as a quiet `benchmarks/speed.py --config=configs/<task>.py` run
measured them side by side, to the threshold and for the whole schedule, each against
alternating's. The values are kept in `results.json` for `--report_only`.
"""

import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# train.py's TensorFlow environment (oneDNN on, one inter-op thread: each run is train.py's run,
# seed for seed), before anything loads TensorFlow.
from benchmarks import machine  # noqa: E402, F401

# isort: split
import tf_fusedprop  # noqa: E402, F401  (first: it loads TensorFlow without its start-up lines)

# isort: split
from absl import flags, logging  # noqa: E402

from benchmarks.time_to_quality.grid import Grid  # noqa: E402
from benchmarks.time_to_quality.plan import STABILIZERS, define_stabilizer  # noqa: E402
from benchmarks.time_to_quality.tasks import DEFAULT_TASKS, FORMS, TASKS  # noqa: E402
from tf_fusedprop.experiment import interrupt  # noqa: E402
from tf_fusedprop.experiment.config import ConfigError  # noqa: E402


def _define_flags():
    values = flags.FlagValues()
    flags.DEFINE_string(
        "out", None, "output directory (default runs/quality, runs/quality_quick with --quick)", flag_values=values
    )
    flags.DEFINE_bool("quick", False, "the reduced grid of each task's quick sizes and seeds", flag_values=values)
    flags.DEFINE_list(
        "tasks",
        list(DEFAULT_TASKS),
        f"tasks to run, of {', '.join(TASKS)} (hours a run: mnist, digits32, mnist64)",
        flag_values=values,
    )
    flags.DEFINE_list(
        "forms", list(FORMS), "forms to run (the hinge runs: those of HINGE_FORMS among them)", flag_values=values
    )
    flags.DEFINE_list(
        "losses", ["nonsaturating", "hinge"], "losses to run (hinge: on HINGE_TASK only)", flag_values=values
    )
    flags.DEFINE_integer(
        "seeds", 0, "seeds per task (0: the task's, or its quick seeds with --quick)", flag_values=values
    )
    flags.DEFINE_list(
        "only_seeds",
        [],
        "train only these seeds' runs of the grid now (a run of hours, one a session); the others stay to train "
        "in a later invocation of the same command (empty: all)",
        flag_values=values,
    )
    flags.DEFINE_multi_string("override", [], "KEY=VALUE set in every run's config (dotted keys)", flag_values=values)
    flags.DEFINE_list(
        "stabilizers", ["defaults"], "rows per form: names of STABILIZERS (or --define_stabilizer)", flag_values=values
    )
    flags.DEFINE_multi_string(
        "define_stabilizer",
        [],
        "NAME:KEY=VALUE,KEY=VALUE... a stabilizer for this invocation, e.g. la20:lookahead.every=20",
        flag_values=values,
    )
    flags.DEFINE_bool(
        "report_only", False, "only rewrite results.md and quality.png from results.json", flag_values=values
    )
    flags.DEFINE_bool("dry_run", False, "print the plan and its estimated time, train nothing", flag_values=values)
    flags.DEFINE_multi_string(
        "reference",
        [],
        "DIR of another grid whose finished runs of these tasks and seeds are reported beside these "
        "(cut at this grid's schedule), not trained again; kept in results.json",
        flag_values=values,
    )
    flags.DEFINE_list(
        "seconds_per_update",
        [],
        "FORM=S or TASK/FORM=S: a form's seconds per G update from a quiet `benchmarks/speed.py --config` run; "
        "the report adds time = G updates x S beside the wall-clock (kept in results.json)",
        flag_values=values,
    )
    return values


def _clock(seconds):
    seconds = int(round(seconds))
    return (
        f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"
    )


class Progress:
    """A progress bar over runs, one line per finished run, with an ETA from the runs' estimated
    costs scaled by how long the finished ones took against theirs."""

    def __init__(self, estimates, done):
        self.estimates, self.done, self.total = list(estimates), done, done + len(estimates)
        self.start, self.spent, self.estimated = time.perf_counter(), 0.0, 0.0

    def update(self, index, wall, text):
        """Prints the line of the `index`-th run to train, finished in `wall` seconds: `text`."""
        self.spent += wall
        self.estimated += self.estimates[index]
        left = sum(self.estimates[index + 1 :]) * self.spent / max(self.estimated, 1e-9)
        finished = self.done + index + 1
        bar = "#" * round(24 * finished / self.total)
        print(
            f"[{bar:<24}] {finished}/{self.total} {_clock(time.perf_counter() - self.start)} elapsed, "
            f"~{_clock(left)} left | {text}",
            flush=True,
        )


def _only_seeds(texts):
    """The seeds of `--only_seeds` as a set of ints (None: empty, all seeds); a bad one: flags.Error."""
    if not texts:
        return None
    try:
        seeds = {int(text) for text in texts}
    except ValueError:
        raise flags.Error(
            f"--only_seeds takes seed numbers, e.g. --only_seeds=2; received {','.join(texts)!r}"
        ) from None
    if min(seeds) < 0:
        raise flags.Error(f"--only_seeds takes seeds >= 0; received {','.join(texts)!r}")
    return seeds


def _describe(rec):
    if rec["status"] != "done":
        return (
            rec["status"]
            + (f" at G update {rec['diverged_at_step']}" if rec["diverged"] else "")
            + (f" ({rec['error'][:120]})" if rec["error"] else "")
        )
    final = rec["final"]
    text = ", ".join(f"{label} {fmt.format(scale * final[k])}" for k, label, scale, fmt in TASKS[rec["task"]].columns)
    return f"{text}; {rec['train_seconds']:.0f} s training"


def _terminated(signum, frame):
    raise interrupt.Interrupted(signum)


def run(argv):
    """Parses `argv` (program name first), runs the grid, writes the results; the exit status
    (128 + the signal's number after Ctrl-C or SIGTERM, said in one line)."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminated) if main else None
    try:
        return _run(argv)
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)


def _run(argv):
    values = _define_flags()
    try:
        values(argv)
        unknown = sorted(set(values.tasks) - set(TASKS)) + sorted(set(values.forms) - set(FORMS))
        if unknown:
            raise flags.Error(f"unknown tasks or forms {unknown}; tasks: {', '.join(TASKS)}, forms: {', '.join(FORMS)}")
        only_seeds = _only_seeds(values.only_seeds)
    except flags.Error as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        import matplotlib  # noqa: F401 -- fail before an hour of training, not after
    except ImportError:
        print("error: quality.png needs matplotlib: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    logging.set_verbosity(logging.ERROR)
    out = values.out or os.path.join("runs", "quality_quick" if values.quick else "quality")
    seeds = {t: values.seeds or (TASKS[t].quick_seeds if values.quick else TASKS[t].seeds) for t in values.tasks}
    try:
        stabilizers = {**STABILIZERS, **dict(map(define_stabilizer, values.define_stabilizer))}
        seconds_per_update = parse_seconds_per_update(values.seconds_per_update)
        grid = Grid(out, _description(values, seeds, stabilizers), seconds_per_update, values.reference)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if values.report_only:
        grid.report()
        print(f"Rewrote {out}/results.md and quality.png from {len(grid.records)} runs.")
        return 0

    try:
        left_out = grid.plan(
            values.tasks,
            values.forms,
            seeds,
            values.losses,
            stabilizers=values.stabilizers,
            quick=values.quick,
            overrides=values.override,
            definitions=stabilizers,
        )
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if left_out:
        print(f"{len(left_out)} runs left out: the same config as another row's ({', '.join(left_out[:4])}...)")
    try:
        grid.resume(only_seeds)
        refused = None
    except ConfigError as err:
        refused = err
    for run_id, (trained, steps) in grid.lengthenings.items():
        print(f"{run_id}: trained on from {trained} to {steps} G updates", flush=True)
    if refused:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    estimates, env = grid.estimates(), grid.environment
    print(
        f"quality: tensorflow {env['tensorflow']}, keras {env['keras']}, python {env['python']}; {env['cpu']}, "
        f"{env['cpus']} CPUs, flags {' '.join(env['cpu_flags']) or '-'}; oneDNN {env['onednn']}; "
        f"inter-op threads {env['inter_op_threads'] or 'TF default'}; load {env['load_average']}",
        flush=True,
    )
    print(
        f"{grid.description}; {len(grid.runs)} runs, {grid.done} done in {out}, {len(grid.todo)} to run "
        + (f"now, {len(grid.deferred)} left for later (--only_seeds) " if grid.deferred else "")
        + f"(~{_clock(sum(estimates))} at the costs of benchmarks/time_to_quality/tasks.py, which another CPU can "
        "miss severalfold; a run of hours prints its own estimate once timed)",
        flush=True,
    )
    if values.dry_run:
        return 0
    grid.warm_up()
    progress = Progress(estimates, grid.done)
    try:
        for index, rec, kept in grid.train():
            if not kept:
                print(f"{rec['id']}: not trained on ({rec['error']}); its record kept", flush=True)
            progress.update(index, rec["wall_seconds"], f"{rec['id']}: {_describe(rec)}")
    except KeyboardInterrupt as err:  # Ctrl-C, or SIGTERM (train_lib keeps the run's checkpoint)
        resumes = any(TASKS[r.task].relative for r, _ in grid.todo)  # an image GAN's run resumes, others restart
        print(
            f"quality: {getattr(err, 'what', 'interrupted')}; {grid.finished()} finished runs are in {grid.path}; "
            f"rerun the same command to go on{' (an unfinished run resumes from its checkpoint)' if resumes else ''}.",
            file=sys.stderr,
            flush=True,
        )
        return 128 + getattr(err, "signum", signal.SIGINT)
    grid.write()
    print(f"Wrote {grid.path}, results.md and quality.png.\n")
    with open(os.path.join(out, "results.md")) as f:
        print(f.read())
    return 0


def _description(values, seeds, stabilizers):
    """The grid's line in results.json and results.md: tasks, seeds, overrides, stabilizers."""
    text = (
        f"{'quick grid' if values.quick else 'grid'}: tasks {', '.join(values.tasks)}; seeds "
        + ", ".join(f"{t} {seeds[t]}" for t in values.tasks)
        + (f"; overrides {', '.join(values.override)}" if values.override else "")
    )
    if values.stabilizers != ["defaults"]:
        text += "; stabilizers " + ", ".join(
            f"{name} ({', '.join(f'{k}={v}' for k, v in stabilizers.get(name, {}).items()) or 'the shipped config'})"
            for name in values.stabilizers
        )
    return text


def parse_seconds_per_update(items):
    """`{form or task/form: seconds}` of `--seconds_per_update` items `FORM=S` or `TASK/FORM=S`.

    Raises:
      ConfigError: another shape, or seconds that are not a positive number.
    """
    parsed = {}
    for item in items:
        key, sep, value = item.partition("=")
        try:
            seconds = float(value)
        except ValueError:
            seconds = None
        if not sep or not key or seconds is None or not seconds > 0:
            raise ConfigError(f"--seconds_per_update takes FORM=S or TASK/FORM=S with S > 0; received {item!r}.")
        parsed[key] = seconds
    return parsed


if __name__ == "__main__":
    sys.exit(run(sys.argv))
