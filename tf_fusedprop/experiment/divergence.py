"""Divergence: a run whose losses or gradients become non-finite stops at once, in one line.

`FusedPropGAN` records the first update whose losses or gradients were not finite
(`FusedPropGAN.divergence()`, saved with its weights). `DivergenceMonitor` reads that record
after every call of the train function (one scalar read while all is well) and raises
`TrainingDivergedError` out of `fit`: no epoch-end callback runs after it, so no sample grid,
evaluation or checkpoint is made of the non-finite weights, and the last good checkpoint
stays as it was (`callbacks.BackupAndRestore` also refuses to save a diverged model).

The error says which player, at which step, which checkpoint is kept, and how to resume from
it with smaller learning rates (`suggested_learning_rates`); `train.py` prints it as one line
with the command to run and exits with status 3.
"""

import os
import shlex

import keras

__all__ = ["DivergenceMonitor", "TrainingDivergedError", "suggested_learning_rates"]

_PLAYERS = {"discriminator": "D", "generator": "G"}


def suggested_learning_rates(learning_rates, caps=None):
    """The learning rates to retry with after a divergence: a tenth of each rate that
    diverged, and at most its cap (e.g. the config file's own value, so that an absurd rate
    is not merely divided by ten).

    Args:
      learning_rates: `(d_lr, g_lr)` of the run that diverged.
      caps: None, or `(d_lr, g_lr)` upper bounds.

    Returns:
      `(d_lr, g_lr)`, floats.
    """
    rates = [float(rate) / 10 for rate in learning_rates]
    if caps is not None:
        rates = [min(rate, float(cap)) for rate, cap in zip(rates, caps)]
    return tuple(rates)


def _rate(value):
    return f"{float(value):g}"


def resume_command(workdir, learning_rates, args=(), program="train.py"):
    """`python train.py ARGS --workdir=WORKDIR --config.d_lr=.. --config.g_lr=..`, shell-quoted.

    Args:
      workdir: the run's directory.
      learning_rates: `(d_lr, g_lr)` to resume with.
      args: the command line's other arguments; its `--workdir`, `--config.d_lr` and
        `--config.g_lr` (as `--flag=value` or `--flag value`) are replaced.
      program: the script's path as the user typed it.
    """
    replaced = ("--workdir", "--config.d_lr", "--config.g_lr")
    kept, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in replaced:
            skip = True  # `--flag value`: its value is the next argument.
        elif not arg.startswith(tuple(f"{flag}=" for flag in replaced)):
            kept.append(arg)
    d_lr, g_lr = learning_rates
    return shlex.join(
        [
            "python",
            program,
            *kept,
            f"--workdir={workdir}",
            f"--config.d_lr={_rate(d_lr)}",
            f"--config.g_lr={_rate(g_lr)}",
        ]
    )


class TrainingDivergedError(RuntimeError):
    """Training stopped because a player's loss or gradients became non-finite.

    `str(error)` is one line: what diverged, at which step, with which learning rates, the
    last good checkpoint kept (or that there is none yet) and the command that resumes
    from it with a tenth of the learning rates; `describe(command)` puts another command in.

    Attributes:
      step: the first update (1-based G update) whose losses or gradients were not finite.
      players: "discriminator" and/or "generator".
      learning_rates: `(d_lr, g_lr)` of the run.
      checkpoint: the last good checkpoint's metadata (`{"epoch", "steps", "weights"}`), or
        None if none was saved yet.
      backup_dir: the checkpoint's directory, or None.
      workdir: the run's directory, or None.
    """

    def __init__(self, divergence, learning_rates, checkpoint=None, backup_dir=None, workdir=None):
        self.step = int(divergence["step"])
        self.players = list(divergence["players"])
        self.learning_rates = tuple(float(rate) for rate in learning_rates)
        self.checkpoint, self.backup_dir, self.workdir = checkpoint, backup_dir, workdir
        super().__init__(self.describe())

    def describe(self, command=None):
        """The one-line message; `command` (default: `resume_command` of the workdir with
        `suggested_learning_rates`) is the command it tells to run."""
        suggested = suggested_learning_rates(self.learning_rates)
        if command is None and self.workdir is not None:
            command = resume_command(self.workdir, suggested)
        if command is None:
            command = f"d_lr={_rate(suggested[0])}, g_lr={_rate(suggested[1])}"
        who = " and ".join(f"{_PLAYERS.get(player, player)}'s" for player in self.players) or "the"
        what = "losses or gradients" if len(self.players) > 1 else "loss or gradients"
        d_lr, g_lr = self.learning_rates
        head = (
            f"training diverged at step {self.step}: {who} {what} became non-finite (NaN or infinite) "
            f"with d_lr={_rate(d_lr)}, g_lr={_rate(g_lr)}"
        )
        if self.checkpoint is None:
            return (
                f"{head}; no checkpoint was saved before it (it diverged in the first epoch), so there is "
                f"nothing to resume: restart with a smaller learning rate: {command}"
            )
        where = f" is kept in {self.backup_dir}" if self.backup_dir else " is kept"
        return (
            f"{head}; the last good checkpoint (epoch {self.checkpoint['epoch']}, step {self.checkpoint['steps']})"
            f"{where}; resume from it with a smaller learning rate: {command}"
        )


class DivergenceMonitor(keras.callbacks.Callback):
    """Stops `fit` of a `FusedPropGAN` at the end of the first batch (train-function call)
    whose updates were not finite, by raising `TrainingDivergedError`.

    Place it first among the callbacks. The error propagates out of `fit` before any
    epoch-end callback runs: the diverged epoch leaves no checkpoint, grid or evaluation.
    Its cost is one scalar read per batch: Keras's TensorFlow backend runs batch-end hooks
    synchronously and turns every batch's logs into Python floats anyway.

    Args:
      checkpoint: the run's `callbacks.BackupAndRestore`, whose last checkpoint the error
        names; None if there is none.
      workdir: the run's directory, for the resume command in the message; None for none.
      learning_rates: `(d_lr, g_lr)` as the run's config sets them, what the resume command's
        flags mean (G's rate after a warm start is `g_lr` x `warmup_g_lr_scale`: a tenth of
        the config's rate is a tenth of the rate that diverged); None reads the optimizers'
        rates at the diverged update.

    Attributes:
      divergence: `FusedPropGAN.divergence()` once it was seen, else None.
    """

    def __init__(self, checkpoint=None, workdir=None, learning_rates=None):
        super().__init__()
        self.checkpoint, self.learning_rates = checkpoint, learning_rates
        self.workdir = None if workdir is None else os.fspath(workdir)
        self.divergence = None

    def on_train_batch_end(self, batch, logs=None):
        divergence = self.model.divergence()
        if divergence is None:
            return
        self.divergence = divergence
        self.model.stop_training = True
        rates = self.learning_rates
        if rates is None:
            optimizers = (self.model.d_optimizer, self.model.g_optimizer)
            # float32 variables: 7 significant digits give back the rate as it was written (1e-3).
            rates = [float(f"{float(keras.ops.convert_to_numpy(o.learning_rate)):.7g}") for o in optimizers]
        raise TrainingDivergedError(
            divergence,
            rates,
            checkpoint=None if self.checkpoint is None else self.checkpoint.metadata(),
            backup_dir=None if self.checkpoint is None else self.checkpoint.backup_dir,
            workdir=self.workdir,
        )
