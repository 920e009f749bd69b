"""One grid under its directory: what its results.json holds (the records, the seconds per
update, the reference grids, the environment and description it was written with), the runs it
plans with their configs, which of them to train (the resume policy: `Grid.resume`,
`lengthened`, `newer_record`), their estimated seconds, training them one after another with
the files rewritten after each, and writing the three files."""

import os

from benchmarks.time_to_quality import plan as planning
from benchmarks.time_to_quality.environment import environment, machine_of
from benchmarks.time_to_quality.results import read_results, reference_path, write_results
from benchmarks.time_to_quality.runs import train_run, warm_up
from benchmarks.time_to_quality.tasks import TASKS
from tf_fusedprop.experiment import workdir as fp_workdir
from tf_fusedprop.experiment.config import ConfigError, json_values


def lengthened(task, old_values, new_values):
    """Whether a finished run of `old_values` is trained on to `new_values`: the same config but
    for a longer schedule, on a task whose runs resume from their checkpoints (the image GANs:
    `train.py` trains a finished run on to a longer `steps`)."""
    old_steps, new_steps = old_values["steps"], new_values["steps"]
    if TASKS[task].relative is None or new_steps <= old_steps:
        return False
    if fp_workdir.schedule_change_refused(old_steps, new_steps, new_values["steps_per_epoch"], finished=True):
        return False
    return planning.comparable({**old_values, "steps": new_steps}) == planning.comparable(new_values)


def newer_record(old, new):
    """The record to keep of a run trained again: `new`, unless it failed where `old` had
    finished (a lengthening that failed: the finished run stays)."""
    return old if new["status"] == "error" and old is not None and old["status"] == "done" else new


class Grid:
    """A grid in its directory `out`: the records of its results.json (`records`, by run id), the
    runs it plans (`plan`), those of them to train (`resume`), and its files (`write`, `report`).

    Attributes:
      out, path: the directory and its results.json.
      records: `{run id: record}`, as stored, then as trained.
      environment: this machine's (`environment.environment`); `description`: the grid's line.
      seconds_per_update, references: those stored in results.json, with the ones given added.
      runs: `[(Run, config)]` planned (`plan`); `todo`: those of them to train (`resume`).
      lengthenings: `{run id: (G updates trained, G updates now)}` of the finished runs of `todo`
        that train on to a longer schedule; `deferred`: the runs left to train that `resume`
        was told to leave to a later invocation (`seeds`).
    """

    def __init__(self, out, description, seconds_per_update=None, references=()):
        """Makes `out` and reads its results.json, if any. The `seconds_per_update` given win
        over those stored (from an earlier invocation); the `references` are added to them.

        Raises:
          ConfigError: a reference directory holds no results.json.
        """
        os.makedirs(out, exist_ok=True)
        self.out, self.path = out, os.path.join(out, "results.json")
        self._stored = read_results(out)
        self.records = {r["id"]: r for r in self._stored["runs"]}
        self.environment, self.description = environment(), description
        self.seconds_per_update = {**self._stored.get("seconds_per_update", {}), **(seconds_per_update or {})}
        self.references = list(dict.fromkeys([*self._stored.get("references", []), *references]))
        for directory in self.references:
            reference_path(directory)
        self.runs, self.todo, self.lengthenings, self.deferred = [], [], {}, []

    def plan(self, tasks, forms, seeds, losses, stabilizers=("defaults",), quick=False, overrides=(), definitions=None):
        """Plans the runs (`plan.plan`) with their configs (`plan.make_config`, the cache under
        `out`; `definitions`: the stabilizers by name, default `plan.STABILIZERS`), each config
        once (`plan.distinct`); returns the ids of the runs left out as the same as another's.

        Raises:
          ConfigError: a run's config is not valid (an override, an unknown stabilizer).
        """
        cache = os.path.join(self.out, "cache")
        runs = [
            (r, planning.make_config(r, quick, overrides, cache, definitions))
            for r in planning.plan(tasks, forms, seeds, losses, stabilizers)
        ]
        self.runs, left_out = planning.distinct(runs)
        return left_out

    def resume(self, seeds=None):
        """Sets `todo`, the planned runs to train: those results.json does not hold finished
        (never run, or failed: a diverged run is finished), and the finished runs of a schedule
        lengthened (`lengthened`: they train on from their checkpoints; `lengthenings`).
        `seeds`: train only the runs of these seeds now (None: all); the others are `deferred`,
        to a later invocation of the same grid (a run of hours, one a session).

        Raises:
          ConfigError: results.json holds a planned run with another config (`todo` and
            `lengthenings` then hold the runs before it).
        """
        self.todo, self.lengthenings, self.deferred = [], {}, []
        for r, config in self.runs:
            old, lengthening = self.records.get(r.id), None
            if old is None or old["status"] not in ("done", "diverged"):  # never run, or failed: (re)run
                pass
            elif old["status"] == "done" and lengthened(r.task, old["config"], json_values(config)):
                lengthening = (old["config"]["steps"], config.steps)
            elif planning.comparable(old["config"]) != planning.comparable(json_values(config)):
                raise ConfigError(
                    f"{self.path} holds run {r.id} with another config; pass another --out (or delete it to rerun)."
                )
            else:
                continue  # finished
            if seeds is not None and r.seed not in seeds:
                self.deferred.append(r)
                continue
            self.todo.append((r, config))
            if lengthening:
                self.lengthenings[r.id] = lengthening

    @property
    def done(self):
        """How many planned runs results.json holds finished (not to train, not deferred)."""
        return len(self.runs) - len(self.todo) - len(self.deferred)

    def estimates(self):
        """The seconds each run of `todo` will take here (a lengthened one: its updates left)."""
        return [planning.estimate(r, c, self.lengthenings.get(r.id, (0,))[0]) for r, c in self.todo]

    def warm_up(self):
        """One untimed short run per task of `todo` in `out/warm_up` (`runs.warm_up`); none
        without runs to train."""
        if self.todo:
            warm_up(self.todo, os.path.join(self.out, "warm_up"))

    def train(self):
        """Trains the runs of `todo` one after another, each in `out/runs/<id>`, results.json and
        results.md rewritten after each; yields `(index in todo, its record, whether that record
        was kept)` after each (not kept: `newer_record` kept the finished one)."""
        for index, (r, config) in enumerate(self.todo):
            rec = train_run(r, config, os.path.join(self.out, "runs", r.id))
            rec["machine"] = machine_of(self.environment)
            self.records[r.id] = newer_record(self.records.get(r.id), rec)
            self._write(self.environment, self.description, plot=False)
            yield index, rec, self.records[r.id] is rec

    def finished(self):
        """How many runs results.json holds finished (done or diverged)."""
        return sum(rec["status"] in ("done", "diverged") for rec in self.records.values())

    def write(self):
        """The three files after training: this machine's environment where runs trained here,
        else the one stored."""
        self._write(
            self.environment if self.todo else self._stored.get("environment", self.environment), self.description
        )

    def report(self):
        """The three files again from results.json (`--report_only`), with the environment and
        description stored there where it holds them."""
        self._write(self._stored.get("environment", self.environment), self._stored.get("grid", self.description))

    def _write(self, environment_, description, plot=True):
        write_results(
            self.out,
            list(self.records.values()),
            environment_,
            description,
            plot=plot,
            seconds_per_update=self.seconds_per_update,
            references=self.references,
        )
