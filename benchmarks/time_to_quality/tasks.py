"""The tasks of the time-to-quality grid, one `Task` record each: the config it trains, its
seeds, its --quick sizes, its cost (for the ETA) and how it is scored."""

import dataclasses

from configs import digits, digits32, grid25, mnist, mnist1k64, mnist64, ring8

__all__ = ["COLORS", "DEFAULT_TASKS", "FORMS", "HINGE_FORMS", "HINGE_TASK", "TASKS", "Task"]

#: The forms in the table's order (alternating, the reference, first).
FORMS = ("alternating", "fused", "inverse", "adaptive", "simultaneous")
#: The hinge loss has no lambda (no `fused`): its single-pass forms against AltGD, on one task.
HINGE_TASK, HINGE_FORMS = "ring8", ("alternating", "inverse", "adaptive")


@dataclasses.dataclass(frozen=True)
class Task:
    """A task of the grid: what it trains, how many seeds, and how it is scored.

    A task with `relative` has a near-plateau threshold instead of a fixed one: the plotted
    metric (lower is better) at most `relative` x alternating's mean final value, over the
    alternating runs (shipped defaults) of the same results (`report.thresholds`).
    """

    config: object  # the configs/ module whose get_config() each run starts from
    seeds: int  # seeds of the full grid (0, 1, ...)
    quick: dict  # --quick: config fields changed (fewer G updates, smaller evaluations)
    quick_seeds: int  # --quick: seeds
    cost: tuple  # seconds of one run on 2 CPU cores: (fixed, per G update, per evaluation), for the ETA
    columns: tuple  # ((metric, label, scale, format), ...): final-step columns of the table
    reached: object  # metrics -> bool: the threshold (None: `relative`)
    threshold: str
    plot: tuple  # (metric, axis label, scale, threshold line (None: `relative`), (low, high), log axis)
    relative: float = None


_MIXTURE_COLUMNS = (("modes_covered", "modes", 1, "{:.1f}"), ("high_quality", "% HQ", 100, "{:.0f}"))
_FID_COLUMNS = (("fid", "FID", 1, "{:.2f}"), ("kid", "KID", 1, "{:.3f}"))
_QUICK_IMAGES = {"steps": 1_000, "steps_per_epoch": 250, "eval_samples": 1_000}


def _plateau_task(config, classifier, per_eval, per_update=0.33):
    """An image task at SNGAN's widths scored by FID under a digits classifier, with the
    near-plateau threshold (hours a run: asked for with --tasks); `per_update`, `per_eval`:
    seconds on 2 CPU cores, for the ETA."""
    return Task(
        config=config,
        seeds=3,
        quick=_QUICK_IMAGES,
        quick_seeds=1,
        cost=(20.0, per_update, per_eval),
        columns=_FID_COLUMNS,
        reached=None,
        threshold="FID <= 1.1x alternating's mean final FID",
        plot=("fid", f"FID ({classifier} classifier)", 1, None, (0.5, None), True),
        relative=1.1,
    )


TASKS = {
    "ring8": Task(
        config=ring8,
        seeds=5,
        quick={"steps": 1_000, "steps_per_epoch": 250},
        quick_seeds=2,
        cost=(4.0, 0.0035, 0.2),
        columns=_MIXTURE_COLUMNS,
        reached=lambda m: m["modes_covered"] >= 8 and m["high_quality"] >= 0.8,
        threshold="8/8 modes, >= 80% high-quality",
        plot=("high_quality", "high-quality samples (%)", 100, 80, (0, 100), False),
    ),
    "grid25": Task(
        config=grid25,
        seeds=5,
        quick={"steps": 1_000, "steps_per_epoch": 250},
        quick_seeds=1,
        cost=(4.0, 0.0037, 0.2),
        columns=_MIXTURE_COLUMNS,
        reached=lambda m: m["modes_covered"] >= 24,
        threshold=">= 24/25 modes",
        plot=("modes_covered", "modes covered (of 25)", 1, 24, (0, 25), False),
    ),
    "digits": Task(
        config=digits,
        seeds=3,
        quick={"steps": 300, "steps_per_epoch": 100, "eval_samples": 1_000},
        quick_seeds=1,
        cost=(8.0, 0.020, 1.5),
        columns=_FID_COLUMNS,
        reached=lambda m: m["fid"] <= 8.0,
        threshold="FID <= 8",
        plot=("fid", "FID (digits classifier)", 1, 8, (0.5, None), True),
    ),
    # ~0.45 s per update with DiffAugment (the 12,000-update periodic runs: 440-490 ms a step, 2 cores).
    "mnist": _plateau_task(mnist, "MNIST-5k", 8.0, per_update=0.45),
    "digits32": _plateau_task(digits32, "digits", 4.0),
    # configs/images.py's defaults at 64 px, scored offline (issue 48).
    "mnist64": _plateau_task(mnist64, "MNIST-5k, 64 px", 20.0, per_update=1.7),
    # The same on 1,000 of those digits, scored against all 5,000 (issue 61: a small folder).
    "mnist1k64": _plateau_task(mnist1k64, "MNIST-5k, 64 px", 20.0, per_update=1.0),
}
#: The default --tasks: the small ones. A run of the image GANs at SNGAN's widths (mnist,
#: digits32) takes hours here: ask for them with --tasks.
DEFAULT_TASKS = ("ring8", "grid25", "digits")
COLORS = {
    "alternating": "black",
    "fused": "tab:blue",
    "inverse": "tab:orange",
    "adaptive": "tab:green",
    "simultaneous": "tab:red",
}
