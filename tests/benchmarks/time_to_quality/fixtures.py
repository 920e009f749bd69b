"""What the tests of benchmarks/time_to_quality share: a history entry, a results.json read
back, and the records of a plateau task's small grid (mnist, two forms, three seeds)."""

import json
import os

from benchmarks.time_to_quality.plan import Run, make_config
from benchmarks.time_to_quality.runs import record

#: Per form, per seed: FID after 500, 1,000 and 1,500 G updates (`plateau_records`).
FIDS = {
    "alternating": ([100.0, 20.0, 10.0], [120.0, 25.0, 12.0], [110.0, 11.0, 11.0]),
    "fused": ([150.0, 12.0, 11.0], [200.0, 40.0, 13.0], [130.0, 12.0, 11.5]),
}


def read_results(out):
    """The results.json under `out`, as JSON."""
    with open(os.path.join(out, "results.json")) as f:
        return json.load(f)


def entry(step, seconds, finite=True, **metrics):
    """A history entry as a run's summary.json holds it: G update `step`, training `seconds`."""
    return {"epoch": step // 10, "step": step, "train_seconds": seconds, "metrics": metrics, "finite": finite}


def plateau_records():
    """The records of mnist's runs of `FIDS`: 1,500 G updates, an evaluation every 500 (100
    training seconds each), one form per run."""
    records = []
    for form, seeds in FIDS.items():
        for seed, fids in enumerate(seeds):
            run = Run("mnist", "nonsaturating", form, seed)
            config = make_config(run)
            config.update(steps=1500, steps_per_epoch=500, alternate_every=0)  # one form per run
            history = [entry(500 * (i + 1), 100.0 * (i + 1), fid=fid, kid=0.1) for i, fid in enumerate(fids)]
            records.append(record(run, config, {"steps": 1500, "train_seconds": 300.0}, history, 400.0))
    return records
