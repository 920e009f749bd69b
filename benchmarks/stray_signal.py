"""Does a training signal tell a run that stalls from one that does not, early enough to act on?

    python benchmarks/quality.py --tasks=mnist --forms=fused --override=steps=4000 \\
        --override=alternate_every=0 --override=probe.every=10 --out=DIR      # probed runs
    python benchmarks/stray_signal.py DIR [DIR ...] [--signal=stray|logit_gap|spread|coverage] [--out=FILE_STEM]

Reads the finished and stopped runs of each time-to-quality grid (`DIR/results.json`) whose
history holds the signal, and writes, per task, each run's quality metric and the signal's
numbers at every evaluation: a markdown table (`FILE_STEM.md`, default `DIR/<signal's stem>.md`)
and a figure (`FILE_STEM.png`: the metric above, the signal below, one line per run) to compare
runs that stalled with runs that did not (issue 62, step 2). Signals (`SIGNALS`):

* `stray` (default; `stray.md`): a `tf_fusedprop.StrayProbe`'s epoch means, `stray` (||g_alt -
  g_sim|| / ||g_sim||) and `stray_cosine`;
* `logit_gap` (`logits.md`): D's epoch-mean logits on real and on generated samples, and their
  gap (real - fake: how sure D is), recorded by every run since they entered the records;
* `spread` (`spread.md`): the epoch mean of `fake_spread`, how far apart G's samples are across a
  batch against the real batch's (`tf_fusedprop.steps.spread_ratio`: near 0 when G draws one
  sample for every latent), recorded by every run since it entered the records;
* `coverage` (`coverage.md`): the epoch mean of `fake_coverage`, the share of a real batch G's
  samples cover (`tf_fusedprop.steps.coverage`: ~0.97 when G draws as the data does, lower where
  it left modes), recorded by every run since it entered the records.
"""

import argparse
import json
import os

import machine  # noqa: F401  (first: sets oneDNN and TF's log level, puts the project first on sys.path)

# isort: split
from benchmarks.time_to_quality.tasks import TASKS


def _gap(entry):
    real, fake = entry.get("real_logit"), entry.get("fake_logit")
    return None if real is None or fake is None else real - fake


def _epoch_mean(key, name, plot, meaning):
    """The entry of `SIGNALS` for a step's own log `key` (its epoch mean), a column called `name`;
    `plot`: the figure's `(label, scale)`."""
    return {
        "key": key,
        "columns": ((name, lambda e: e.get(key), 2),),
        "plot": (lambda e: e.get(key), *plot),
        "stem": name,
        "header": (
            f"# G's {name} beside quality\n\nWritten by `benchmarks/stray_signal.py "
            f"--signal={name}` from {{grids}}. Per evaluation: the task's metric and the epoch's mean `{key}`: "
            f"{meaning}.\n\n"
        ),
    }


#: Per signal: the key a run's history must hold, the table's columns (name, value of a history
#: entry, significant digits), the figure's lower panel (value, label, scale), the default file
#: stem and the page's header.
SIGNALS = {
    "stray": {
        "key": "stray",
        "columns": (("stray", lambda e: e.get("stray"), 2), ("cosine", lambda e: e.get("stray_cosine"), 2)),
        "plot": (lambda e: e.get("stray"), "stray: ||g_alt - g_sim|| / ||g_sim||", "log"),
        "stem": "stray",
        "header": (
            "# The stray probe beside quality\n\nWritten by `benchmarks/stray_signal.py` from {grids}. Per "
            "evaluation: the task's metric, `stray` (||g_alt - g_sim|| / ||g_sim||, G's gradient at D's updated "
            "weights against its gradient at D's old ones, the epoch's mean over the probed updates) and "
            "`stray_cosine`.\n\n"
        ),
    },
    "logit_gap": {
        "key": "real_logit",
        "columns": (
            ("real", lambda e: e.get("real_logit"), 2),
            ("fake", lambda e: e.get("fake_logit"), 2),
            ("gap", _gap, 2),
        ),
        "plot": (_gap, "D's logit gap: mean real - mean fake", "linear"),
        "stem": "logits",
        "header": (
            "# D's logits beside quality\n\nWritten by `benchmarks/stray_signal.py --signal=logit_gap` from "
            "{grids}. Per evaluation: the task's metric, D's mean logit on real samples and on generated ones "
            "over the epoch, and their gap (real - fake).\n\n"
        ),
    },
    "spread": _epoch_mean(
        "fake_spread",
        "spread",
        ("G's spread across a batch / the data's", "log"),
        "the mean over pixels of the standard deviation across a batch of G's samples, over the same of the real "
        "batch (near 0: G draws one sample for every latent)",
    ),
    "coverage": _epoch_mean(
        "fake_coverage",
        "coverage",
        ("G's coverage of the real batch", "linear"),
        "the share of a real batch's samples that have one of G's samples nearer than their 5th nearest real "
        "neighbour (~0.97 when G draws as the data does, lower by the share of the batch in modes G left)",
    ),
}


def probed_runs(directories, key="stray"):
    """`{task: [run record, ...]}` of the runs whose history holds `key` (by default the probe's
    numbers), in the order of their grids, by form and seed."""
    runs = {}
    for directory in directories:
        with open(os.path.join(directory, "results.json")) as f:
            records = json.load(f)["runs"]
        for record in sorted(records, key=lambda r: (r["task"], r["form"], r.get("stabilizer") or "", r["seed"])):
            if any(key in entry for entry in record.get("history") or ()):
                runs.setdefault(record["task"], []).append(record)
    return runs


def _label(record):
    stabilizer = record.get("stabilizer")
    row = record["form"] + (f"+{stabilizer}" if stabilizer and stabilizer != "defaults" else "")
    return f"{row} s{record['seed']}"


def _cell(value, digits):
    return "—" if value is None else f"{value:.{digits}g}"


def table(task, records, signal="stray"):
    """The markdown table of one task: per run, the metric and the signal's columns at each
    evaluation."""
    metric = TASKS[task].plot[0]
    columns = SIGNALS[signal]["columns"]
    steps = sorted({entry["step"] for record in records for entry in record["history"]})
    lines = [
        f"### {task}: {' / '.join([metric] + [name for name, _, _ in columns])} at each evaluation",
        "",
        "| run | " + " | ".join(str(step) for step in steps) + " |",
        "|---|" + "---|" * len(steps),
    ]
    for record in records:
        by_step = {entry["step"]: entry for entry in record["history"]}
        cells = []
        for step in steps:
            entry = by_step.get(step)
            if entry is None:
                cells.append("")
                continue
            value = (entry.get("metrics") or {}).get(metric)
            cells.append(" / ".join([_cell(value, 3)] + [_cell(read(entry), digits) for _, read, digits in columns]))
        lines.append(f"| {_label(record)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def figure(runs, path, signal="stray"):
    """Per task, the metric (above) and the signal (below) against G updates, one line per run."""
    read, signal_label, signal_scale = SIGNALS[signal]["plot"]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(runs), figsize=(5.5 * len(runs), 7), squeeze=False, sharex="col")
    for column, (task, records) in enumerate(runs.items()):
        metric, label, scale, _, _, log = TASKS[task].plot
        for record in records:
            steps = [entry["step"] for entry in record["history"]]
            values = [(entry.get("metrics") or {}).get(metric) for entry in record["history"]]
            values = [None if v is None else v * scale for v in values]
            line = axes[0, column].plot(steps, values, marker=".", label=_label(record))[0]
            axes[1, column].plot(
                steps, [read(entry) for entry in record["history"]], marker=".", color=line.get_color()
            )
        axes[0, column].set(title=task, ylabel=label, yscale="log" if log else "linear")
        axes[1, column].set(xlabel="G updates", ylabel=signal_label, yscale=signal_scale)
        axes[0, column].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("grids", nargs="+", help="time-to-quality grid directories (with results.json)")
    parser.add_argument("--signal", choices=sorted(SIGNALS), default="stray", help="the signal beside quality")
    parser.add_argument("--out", help="file stem of the table and figure (default: FIRST_GRID/<signal's stem>)")
    args = parser.parse_args(argv)
    signal = SIGNALS[args.signal]
    runs = probed_runs(args.grids, signal["key"])
    if not runs:
        why = "was probed (config probe.every > 0)" if args.signal == "stray" else "recorded D's logits"
        parser.exit(1, f"No run of {', '.join(args.grids)} {why}.\n")
    stem = args.out or os.path.join(args.grids[0], signal["stem"])
    header = signal["header"].format(grids=", ".join(f"`{g}`" for g in args.grids))
    with open(stem + ".md", "w") as f:
        f.write(header + "\n".join(table(task, records, args.signal) for task, records in runs.items()))
    figure(runs, stem + ".png", args.signal)
    print(f"{sum(map(len, runs.values()))} runs with {args.signal}: {stem}.md, {stem}.png")


if __name__ == "__main__":
    main()
