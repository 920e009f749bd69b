"""What a grid's records say: the groups of the table, thresholds and the time to them, the
rows of the table (measured and modelled time), and results.md's text."""

import collections
import math
import statistics

from benchmarks.time_to_quality.tasks import FORMS, HINGE_TASK, TASKS
from benchmarks.time_to_quality.values import finite_number
from tf_fusedprop.experiment import training_plan
from tf_fusedprop.experiment.config import with_added_fields


def _row(record):
    return record.get("row", record["form"])


def groups(records):
    """`{(task, loss): {row: [records]}}` in the table's order: forms in FORMS' order, each with
    its stabilizers in the order they first appear (a row is a form and its stabilizer)."""
    order = [(t, "nonsaturating") for t in TASKS] + [(HINGE_TASK, "hinge")]
    grouped = {}
    for task, loss in order + sorted({(r["task"], r["loss"]) for r in records} - set(order)):
        matching = [r for r in records if (r["task"], r["loss"]) == (task, loss)]
        first = {}
        for index, r in enumerate(matching):
            first.setdefault(_row(r), (FORMS.index(r["form"]), index))
        rows = {row: [r for r in matching if _row(r) == row] for row in sorted(first, key=first.get)}
        if rows:
            grouped[task, loss] = rows
    return grouped


def thresholds(records):
    """`{(task, loss): (reached(metrics) -> bool, description)}` of each group of `records`: the
    task's fixed threshold, or for a `relative` task the plotted metric at most `relative` x the
    mean final value of its alternating runs at the shipped defaults (None before any of them
    finished)."""
    result = {}
    for (task, loss), forms in groups(records).items():
        info = TASKS[task]
        if info.relative is None:
            result[task, loss] = (info.reached, info.threshold)
            continue
        metric, value = info.plot[0], threshold_value(info, forms)
        if value is None:
            result[task, loss] = (None, f"{info.threshold} (none finished yet)")
            continue
        result[task, loss] = (
            lambda m, metric=metric, value=value: finite_number(m.get(metric)) and m[metric] <= value,
            f"{metric.upper()} <= {value:.4g} ({info.relative}x alternating's mean final {metric.upper()})",
        )
    return result


def threshold_value(info, forms):
    """A relative task's threshold: `relative` x the mean final plotted metric of the
    alternating runs among `forms` (`{row: records}`), or None before one finished."""
    metric = info.plot[0]
    finals = [r["final"].get(metric) for r in forms.get("alternating", []) if r["final"]]
    finals = [value for value in finals if finite_number(value)]
    return info.relative * statistics.mean(finals) if finals else None


def time_to_threshold(rec, reached=None):
    """`(train_seconds, step)` of the run's first evaluation that meets `reached` (default: its
    task's fixed threshold), or None (also when the task's threshold is not known yet)."""
    reached = reached or TASKS[rec["task"]].reached
    if reached is None:
        return None
    for entry in rec["history"]:
        if entry["finite"] and all(finite_number(v) for v in entry["metrics"].values()) and reached(entry["metrics"]):
            return entry["train_seconds"], entry["step"]
    return None


def best_evaluation(rec, metric):
    """`(value, step)` of the run's lowest finite `metric` over its evaluations (what keeping
    its best checkpoint gives), or None when no evaluation had one."""
    scored = [
        (entry["metrics"][metric], entry["step"])
        for entry in rec["history"]
        if entry["finite"] and finite_number(entry["metrics"].get(metric))
    ]
    return min(scored) if scored else None


def last_fifth_change(runs, metric):
    """`(step, mean there, mean final, relative change)` of the runs' mean `metric` from their
    last evaluation at or before four fifths of the schedule to the end (issue 30's plateau:
    alternating's FID moves < 5% over the last fifth), or None without a finite mean at both."""
    steps = statistics.median([r["config"]["steps"] for r in runs])
    evaluated = sorted({e["step"] for r in runs for e in r["history"]})
    earlier = [step for step in evaluated if step <= 0.8 * steps]
    if not earlier:
        return None
    start, end = _mean_at(runs, metric, earlier[-1]), _mean_at(runs, metric, evaluated[-1])
    if start is None or end is None:
        return None
    return earlier[-1], start, end, (end - start) / start


def _mean_at(runs, metric, step):
    """The mean `metric` of `runs` at G update `step`, or None unless every run has a finite one."""
    values = [
        entry["metrics"].get(metric)
        for r in runs
        for entry in r["history"]
        if entry["step"] == step and entry["finite"]
    ]
    values = [v for v in values if finite_number(v)]
    return statistics.mean(values) if len(values) == len(runs) else None


def mean_curve_reaches(runs, metric, reached):
    """The first G update at which the runs' mean `metric` meets `reached` (a threshold on a
    metrics dict), or None. Beside the median over runs of each run's first update there: near
    a plateau, where the curves are flat and the threshold lies within the seeds' spread, which
    seeds cross first is seed noise, and the mean curve is the steadier reading."""
    for step in sorted({e["step"] for r in runs for e in r["history"]}):
        mean = _mean_at(runs, metric, step)
        if mean is not None and reached({metric: mean}):
            return step
    return None


def _best_rows(records, seconds_per_update):
    """results.md lines: per row of a `relative` task, the best plotted metric over the schedule
    (mean +- std over runs), the median G update where it came, (with the form's seconds per
    update) that update's modelled time, how far the mean moved over the last fifth, and where
    the mean curve meets the threshold (`mean_curve_reaches`)."""
    lines, limits = [], thresholds(records)
    for (task, loss), forms in groups(records).items():
        info = TASKS[task]
        if info.relative is None:
            continue
        metric, (_, label, scale, fmt) = info.plot[0], info.columns[0]
        reached, reference = limits[task, loss][0], None
        for form, runs in forms.items():
            crossing = reached and mean_curve_reaches(runs, metric, reached)
            crossing_model = _modelled(task, runs[0]["form"], crossing, runs, seconds_per_update)
            crossing_seconds = crossing_model and crossing_model["threshold_seconds"]
            if form == "alternating":
                reference = crossing_seconds
            mean_curve = _number(crossing, "{:.0f}")
            if crossing_seconds:
                mean_curve += f", {crossing_seconds:.0f} s"
                if reference and form != "alternating":
                    mean_curve += f", {crossing_seconds / reference:.2f}x"
            best = [b for b in (best_evaluation(r, metric) for r in runs) if b]
            if not best:
                continue
            step = statistics.median([b[1] for b in best])
            modelled = _modelled(task, runs[0]["form"], step, runs, seconds_per_update)
            change = last_fifth_change(runs, metric)
            moved = (
                "—"
                if change is None
                else f"{fmt.format(scale * change[1])} at {change[0]} to {fmt.format(scale * change[2])}: "
                f"{100 * change[3]:+.0f}%"
            )
            lines.append(
                f"| {task} | {loss} | {form} | {_mean_std([b[0] for b in best], scale, fmt)} "
                f"| {', '.join(str(b[1]) for b in best)} | {step:.0f} "
                f"| {_number(modelled and modelled['threshold_seconds'], '{:.0f}')} | {moved} | {mean_curve} |"
            )
    if not lines:
        return []
    return [
        "",
        "Best over the schedule (what keeping each run's best checkpoint gives; the G update of the best "
        "evaluation per run, their median, and that median x the form's seconds per update), the mean "
        f"{label} over the last fifth of the schedule (from the last evaluation at or before four fifths; a "
        "plateau moves < 5%), and where the mean curve over the runs first meets the threshold (G update; "
        "with seconds per update, x them and against alternating's: near a plateau a steadier reading than "
        "the median run's first crossing):",
        "",
        f"| task | loss | form (+ stabilizer) | best {label} | at G update, per run | median | x s per update "
        f"| mean {label} over the last fifth | mean curve to threshold |",
        "|---|---|---|---|---|---|---|---|---|",
        *lines,
    ]


#: The mantissas of the levels at which `level_rows` reads the mean curves, in each decade.
_LADDER = (1.0, 1.5, 2.0, 3.0, 5.0, 7.0)


def levels(threshold, span=10.0):
    """The levels of a lower-is-better metric from the first `_LADDER` value at or above `span`
    x `threshold` down to `threshold` (included, last): issue 46's "at every FID from 20 down to
    the near-final one", for a near-final threshold of ~2."""
    top = span * threshold
    first = math.floor(math.log10(threshold))
    ladder = sorted(m * 10.0**k for k in range(first, math.ceil(math.log10(top)) + 1) for m in _LADDER)
    ceiling = min(v for v in ladder if v >= top * (1 - 1e-9))
    return [v for v in reversed(ladder) if threshold < v <= ceiling] + [threshold]


def level_rows(records, seconds_per_update):
    """results.md lines: per `relative` task, where each row's mean curve first meets each of
    `levels(threshold)` (G update and, with seconds per update, its modelled time against
    alternating's mean curve at the same level), and the worst of those ratios (the slowest level
    against alternating; "never": a level alternating's mean curve met and this row's did not)."""
    lines = []
    for (task, loss), forms in groups(records).items():
        info = TASKS[task]
        value = threshold_value(info, forms) if info.relative is not None else None
        if value is None:
            continue
        metric, (_, label, scale, fmt) = info.plot[0], info.columns[0]
        marks = levels(value)
        reference = {}
        table = []
        for form, runs in forms.items():
            seconds_at = seconds_model(task, runs, seconds_per_update)
            cells, ratios = [], []
            for level in marks:
                step = mean_curve_reaches(runs, metric, lambda m, level=level, metric=metric: m[metric] <= level)
                seconds = None if step is None or seconds_at is None else seconds_at(step)
                if form == "alternating":
                    reference[level] = seconds
                theirs = reference.get(level)
                cell = _number(step, "{:.0f}")
                if form != "alternating" and theirs:
                    ratios.append(math.inf if seconds is None else seconds / theirs)
                    cell += "" if seconds is None else f" ({seconds / theirs:.2f}x)"
                cells.append(cell)
            worst = "—" if not ratios else "never" if math.isinf(max(ratios)) else f"{max(ratios):.2f}x"
            table.append(f"| {task} | {loss} | {form} | {len(runs)} | {' | '.join(cells)} | {worst} |")
        heads = [f"{scale * level:g}" for level in marks[:-1]] + [f"{fmt.format(scale * marks[-1])} (threshold)"]
        lines += [
            "",
            f"Where the mean curve over the runs first meets each {label} level on {task} (G update; with seconds "
            "per update, its modelled time against alternating's mean curve at the same level), from 10x the "
            "threshold down to it; worst: the largest of those ratios (< 1 at every level: this row is faster "
            "all the way down; a mean over fewer runs than alternating's is a reading, not a comparison):",
            "",
            f"| task | loss | form (+ stabilizer) | runs | {' | '.join(heads)} | worst vs alternating |",
            "|---" * (len(heads) + 5) + "|",
            *table,
        ]
    return lines


def median_or_none(values):
    """The median, a run that never reached counting as infinitely slow; None when fewer than
    half reached."""
    median = statistics.median([math.inf if v is None else v for v in values])
    return None if math.isinf(median) else median


def _mean_std(values, scale, fmt):
    values = [scale * v for v in values if finite_number(v)]
    if not values:
        return "—"
    if len(values) == 1:
        return fmt.format(values[0])
    return f"{fmt.format(statistics.mean(values))} ± {fmt.format(statistics.stdev(values))}"


def summarize(records, seconds_per_update=None):
    """Rows of the table: one per (task, loss, form). With `seconds_per_update` (`{form or
    task/form: seconds}`, as `--seconds_per_update` gives them), each row also has `modelled`: its
    seconds per update and the time it would take at that speed (updates x seconds) to the
    threshold and for the schedule, each against alternating's."""
    rows, limits = [], thresholds(records)
    for (task, loss), forms in groups(records).items():
        info = TASKS[task]
        reached, _ = limits[task, loss]
        reference, reference_model = None, None
        for form, runs in forms.items():
            reach = [time_to_threshold(r, reached) for r in runs]
            seconds = median_or_none([None if x is None else x[0] for x in reach])
            steps = median_or_none([None if x is None else x[1] for x in reach])
            if form == "alternating":  # the reference: alternating at the shipped defaults
                reference = seconds
            finals = [r["final"] for r in runs if r["final"]]
            train = [r["train_seconds"] for r in runs if r["status"] == "done" and r["train_seconds"]]
            modelled = _modelled(task, runs[0]["form"], steps, runs, seconds_per_update)
            if form == "alternating":
                reference_model = modelled
            if modelled and reference_model and form != "alternating":
                for key in ("threshold", "schedule"):
                    ours, theirs = modelled[f"{key}_seconds"], reference_model[f"{key}_seconds"]
                    modelled[f"{key}_vs_alternating"] = ours / theirs if ours and theirs else None
            rows.append(
                {
                    "task": task,
                    "loss": loss,
                    "form": form,
                    "modelled": modelled,
                    "runs": len(runs),
                    "diverged": sum(r["diverged"] for r in runs),
                    "errors": sum(r["status"] in ("error", "stopped") for r in runs),
                    "final": [_mean_std([f.get(k) for f in finals], scale, fmt) for k, _, scale, fmt in info.columns],
                    "reached": sum(x is not None for x in reach),
                    "seconds": seconds,
                    "steps": steps,
                    "speedup": reference / seconds if reference and seconds and form != "alternating" else None,
                    "train_seconds": statistics.median(train) if train else None,
                }
            )
    return rows


def _per_update(task, form, seconds_per_update):
    """The form's seconds per update on `task` (`TASK/FORM` before `FORM`), or None."""
    table = seconds_per_update or {}
    return table.get(f"{task}/{form}", table.get(form))


def seconds_model(task, runs, seconds_per_update):
    """`G updates -> modelled seconds` of a row's runs: the updates each form of the run's
    schedule trains (`training_plan`: a warm start and the alternating updates mixed in are
    alternating's) x that form's seconds per update; None without them."""
    plan = training_plan.plan(with_added_fields(runs[0]["config"]))
    per_update = {form.name: _per_update(task, form.name, seconds_per_update) for form in plan.schedule.forms}
    if None in per_update.values():
        return None
    if not _counted_ahead(plan):
        return _seconds_from_runs(plan, runs, per_update)

    def seconds_at(steps):
        return sum(count * per_update[name] for name, count in plan.counts(steps).items())

    return seconds_at


def _counted_ahead(plan):
    """Whether the plan says how many updates each form trains (an `Auto` schedule does not)."""
    try:
        plan.counts(1)
    except ValueError:
        return False
    return True


def _seconds_from_runs(plan, runs, per_update):
    """`seconds_at` of a schedule that decides during the run: each run's `alternated` log (its
    alternating updates, a warm start's among them; between two evaluations, interpolated) x
    alternating's seconds, the other updates x the form's; the median over the runs that
    logged it up to there."""
    other = "alternating"
    (form,) = {f.name for f in plan.schedule.forms if f.name != other}
    logged = [[(0, 0.0)] + [(e["step"], e["alternated"]) for e in r["history"] if "alternated" in e] for r in runs]

    def alternated(log, steps):
        for (s0, a0), (s1, a1) in zip(log, log[1:]):
            if s0 <= steps <= s1:
                return a0 + (a1 - a0) * (steps - s0) / (s1 - s0) if s1 > s0 else a1
        return None  # past the run's last log

    def seconds_at(steps):
        counts = [a for a in (alternated(log, steps) for log in logged) if a is not None]
        each = [(steps - a) * per_update[form] + a * per_update[other] for a in counts]
        return statistics.median(each) if each else None

    return seconds_at


def _modelled(task, form, steps_to_threshold, runs, seconds_per_update):
    """A row's modelled times (see `summarize`), or None without its forms' seconds per update."""
    seconds_at = seconds_model(task, runs, seconds_per_update)
    if seconds_at is None:
        return None
    schedule = statistics.median([r["config"]["steps"] for r in runs])
    return {
        "seconds_per_update": _per_update(task, form, seconds_per_update),
        "threshold_seconds": None if steps_to_threshold is None else seconds_at(steps_to_threshold),
        "schedule_steps": schedule,
        "schedule_seconds": seconds_at(schedule),
    }


def _number(value, fmt):
    return "—" if value is None else fmt.format(value)


def _machines(records):
    """The results.md line counting runs per machine, or None when they all ran on one."""
    counts = collections.Counter(r.get("machine") or "not recorded" for r in records)
    if len(counts) < 2:
        return None
    return (
        "Runs per machine (their wall-clock seconds do not compare): "
        + "; ".join(f"{name}: {n}" for name, n in counts.items())
        + "."
    )


def _references(records):
    """A line naming the rows that come from other grids (`results.reference_records`), or ""."""
    taken = collections.defaultdict(set)
    for r in records:
        if r.get("reference"):
            taken[r["reference"]].add(_row(r))
    return "".join(
        f"Rows {', '.join(sorted(rows))}: the runs of {directory} (these seeds, cut at this schedule), not "
        "trained in this grid. "
        for directory, rows in taken.items()
    ).strip()


def markdown(records, environment_, grid, seconds_per_update=None):
    """results.md: the table, the thresholds, how it was measured (and, with
    `seconds_per_update`, the modelled times: `summarize`)."""
    rows, limits = summarize(records, seconds_per_update), thresholds(records)
    lines = [
        "# Time to quality",
        "",
        f"{len(records)} runs; {grid}. {environment_['cpu']} ({environment_['cpus']} CPUs, "
        f"{' '.join(environment_['cpu_flags'])}), TF {environment_['tensorflow']}, Keras {environment_['keras']}, "
        f"oneDNN {environment_['onednn']}"
        + (
            f", inter-op threads {environment_['inter_op_threads'] or 'TF default'}."
            if "inter_op_threads" in environment_  # recorded since 2026-12-07
            else "."
        ),
        *(["", machines] if (machines := _machines(records)) else []),
        *(["", references] if (references := _references(records)) else []),
        "",
        "| task | loss | form (+ stabilizer) | runs | diverged | final metric | second metric | reached threshold "
        "| median s to threshold | vs alternating | median G updates to threshold | training s per run |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        info = TASKS[row["task"]]
        labels = [f"{label} {value}" for (_, label, _, _), value in zip(info.columns, row["final"])]
        lines.append(
            f"| {row['task']} | {row['loss']} | {row['form']} | {row['runs']} | {row['diverged']} | {labels[0]} "
            f"| {labels[1]} | {row['reached']}/{row['runs']} ({limits[row['task'], row['loss']][1]}) "
            f"| {_number(row['seconds'], '{:.1f}')} | {_number(row['speedup'], '{:.2f}x')} "
            f"| {_number(row['steps'], '{:.0f}')} | {_number(row['train_seconds'], '{:.1f}')} |"
        )
    failed = [r for r in records if r["status"] in ("diverged", "error", "stopped")]
    lines += [
        "",
        "Final metrics: mean ± std over the runs that did not diverge, at the last G update. "
        "Time to threshold: training seconds (epoch time: evaluation, sample grids and checkpoints "
        "excluded; the first epoch includes tracing) at the first evaluation meeting it; the median "
        "counts a run that never reached it as infinitely slow (— when fewer than half reached). "
        "vs alternating: the alternating median over this form's (> 1: this form is faster).",
    ]
    modelled = [row for row in rows if row["modelled"]]
    if modelled:
        lines += [
            "",
            "Time modelled as G updates x seconds per update (the seconds per update measured side by side "
            "on a quiet machine by `benchmarks/speed.py --config`; the G updates above do not depend on the "
            "machine's load, the wall-clock does; a warm start's updates, `warmup`, at alternating's seconds; "
            "time / alternating's < 1: this form is faster):",
            "",
            "| task | loss | form (+ stabilizer) | s per update | median G updates to threshold | x s per update "
            "| time / alternating's | schedule (G updates) | x s per update | time / alternating's |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in modelled:
            m = row["modelled"]
            lines.append(
                f"| {row['task']} | {row['loss']} | {row['form']} | {m['seconds_per_update']:.4g} "
                f"| {_number(row['steps'], '{:.0f}')} | {_number(m['threshold_seconds'], '{:.0f}')} "
                f"| {_number(m.get('threshold_vs_alternating'), '{:.2f}x')} | {m['schedule_steps']:.0f} "
                f"| {m['schedule_seconds']:.0f} | {_number(m.get('schedule_vs_alternating'), '{:.2f}x')} |"
            )
    lines += _best_rows(records, seconds_per_update)
    lines += level_rows(records, seconds_per_update)
    if failed:
        lines += ["", "Runs that diverged or failed:", ""]
        lines += [
            f"- {r['id']}: {r['status']}"
            + (f" at G update {r['diverged_at_step']}" if r["diverged"] else "")
            + (f" ({r['error']})" if r["error"] else "")
            for r in failed
        ]
    return "\n".join(lines) + "\n"
