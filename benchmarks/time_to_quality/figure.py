"""quality.png: per task, the plotted metric against (measured or modelled) seconds and against
G updates, mean +- std over seeds."""

import statistics

import numpy as np

from benchmarks.time_to_quality.report import groups, seconds_model, threshold_value, thresholds
from benchmarks.time_to_quality.tasks import COLORS, TASKS
from benchmarks.time_to_quality.values import finite_number
from tf_fusedprop.experiment import files


def curve(runs, metric, scale, seconds_at=None):
    """Per evaluation step: median training seconds (with `seconds_at`, the modelled ones:
    `seconds_model`'s), and mean and std of `metric` over the runs finite there."""
    steps = sorted({e["step"] for r in runs for e in r["history"]})
    rows = []
    for step in steps:
        entries = [e for r in runs for e in r["history"] if e["step"] == step]
        values = [scale * e["metrics"][metric] for e in entries if finite_number(e["metrics"].get(metric))]
        seconds = [e["train_seconds"] for e in entries if e["train_seconds"] is not None]
        if values and seconds:
            elapsed = statistics.median(seconds) if seconds_at is None else seconds_at(step)
            rows.append((step, elapsed, np.mean(values), np.std(values)))
    return np.array(rows, dtype=np.float64).reshape(-1, 4).T


_LINESTYLES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "D", "v", "x")


def line_style(index):
    """(linestyle, marker) of a task's `index`-th stabilizer row: the rows of one form share its
    colour, so the pairs differ for the first 24 rows (four line styles, then the next marker)."""
    return _LINESTYLES[index % len(_LINESTYLES)], _MARKERS[(index // len(_LINESTYLES)) % len(_MARKERS)]


def figure(records, path, seconds_per_update=None):
    """quality.png: per (task, loss), the plotted metric against training seconds (top row) and
    G updates (bottom row), a line per form (mean over seeds) with a +-1 std band. Where every
    form of a task has its seconds per update (`seconds_per_update`), the top row is modelled
    time (G updates x seconds per update): a loaded machine's wall-clock would mislead."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grouped, limits = groups(records), thresholds(records)
    fig, axes = plt.subplots(2, len(grouped), figsize=(max(4.3 * len(grouped), 6.0), 7.4), squeeze=False)
    for column, ((task, loss), forms) in enumerate(grouped.items()):
        metric, ylabel, scale, line, (low, high), log = TASKS[task].plot
        stabilizers = list(dict.fromkeys(r.get("stabilizer", "defaults") for runs in forms.values() for r in runs))
        models = {form: seconds_model(task, runs, seconds_per_update) for form, runs in forms.items()}
        modelled = None not in models.values()
        for form, runs in forms.items():
            steps, seconds, mean, std = curve(runs, metric, scale, models[form] if modelled else None)
            diverged = sum(r["diverged"] for r in runs)
            base, stabilizer = runs[0]["form"], runs[0].get("stabilizer", "defaults")
            style, marker = line_style(stabilizers.index(stabilizer))
            label = (
                f"{form} ({len(runs)} seed{'s' if len(runs) > 1 else ''}{f', {diverged} diverged' if diverged else ''})"
            )
            for row, x in enumerate((seconds, steps)):
                ax = axes[row, column]
                ax.plot(
                    x,
                    mean,
                    color=COLORS[base],
                    label=label,
                    linewidth=1.6,
                    marker=marker,
                    markersize=3,
                    linestyle=style,
                )
                ax.fill_between(
                    x,
                    np.clip(mean - std, low, high),
                    np.clip(mean + std, low, high),
                    color=COLORS[base],
                    alpha=0.15,
                    linewidth=0,
                )
        for row in range(2):
            ax = axes[row, column]
            if line is None:  # a relative threshold: known once alternating's runs finished
                line = threshold_value(TASKS[task], forms)
            if line is not None:
                ax.axhline(line, color="grey", linestyle=":", linewidth=1)
            if log:
                ax.set_yscale("log")
            ax.set_ylabel(ylabel)
            seconds_label = "modelled seconds (G updates x s per update)" if modelled else "training seconds"
            ax.set_xlabel(seconds_label if row == 0 else "G updates")
            ax.grid(alpha=0.3)
            ax.set_xlim(left=0)
            if not log:
                ax.set_ylim(low, high * 1.04)
        axes[0, column].set_title(f"{task}, {loss} loss\nthreshold: {limits[task, loss][1]}", fontsize=9)
        axes[0, column].legend(fontsize=7, loc="best")
    fig.suptitle(
        "Sample quality against seconds and G updates\nmean over seeds, band +-1 std, dotted: threshold",
        fontsize=10,
    )
    fig.tight_layout()
    files.atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=100, format="png"))
    plt.close(fig)
