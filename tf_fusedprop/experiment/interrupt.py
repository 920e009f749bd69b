"""Ctrl-C and SIGTERM: a stopped run keeps every step it trained, says so in one line, and resumes.

`Signals` turns SIGINT (Ctrl-C) and SIGTERM (what Slurm, Kubernetes and preemptible cloud
machines send before they stop a job) into `Interrupted`, a `KeyboardInterrupt`, after the step
in progress and after a checkpoint being written (`Signals.deferred`: a second signal
meanwhile changes nothing). Then `callbacks.BackupAndRestore` saves a checkpoint at the step
reached (mid-epoch if need be) and `train_lib` raises `TrainingInterrupted`, which knows the
step and that checkpoint; `train.py`
prints `describe(command)` and exits with 128 + the signal's number (130 for SIGINT, 143 for
SIGTERM, the shells' convention). Rerunning the same command resumes from that step, exactly
as the uninterrupted run would have gone on.
"""

import contextlib
import signal
import threading

__all__ = ["Interrupted", "Signals", "TrainingInterrupted"]

#: The signals that stop a run cleanly.
STOPPING = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A stopping signal arrived (SIGINT or SIGTERM).

    Attributes:
      signum: the signal's number.
    """

    def __init__(self, signum=signal.SIGINT, *args):
        self.signum = int(signum)
        super().__init__(*args)

    @property
    def signal_name(self):
        """ "SIGINT", "SIGTERM", ..."""
        return signal.Signals(self.signum).name

    @property
    def exit_status(self):
        """128 + the signal's number: what a shell reports for a process the signal stopped."""
        return 128 + self.signum

    @property
    def what(self):
        """How the run stopped, in the words that start its line."""
        return "interrupted" if self.signum == signal.SIGINT else f"stopped by {self.signal_name}"


class TrainingInterrupted(Interrupted):
    """Training stopped by a signal, with its steps saved.

    Attributes:
      signum: the signal's number.
      step: the G updates done when it stopped.
      checkpoint: the last checkpoint's metadata (`{"epoch", "steps", "weights", ...}`), or None.
      backup_dir: the checkpoint's directory.
      workdir: the run's directory.
      trained: whether every epoch was trained (it stopped while the generator and the summary
        were written); rerunning then trains nothing and writes them.
    """

    def __init__(self, step, checkpoint, backup_dir, workdir, trained=False, signum=signal.SIGINT):
        self.step, self.checkpoint, self.backup_dir, self.workdir = int(step), checkpoint, backup_dir, workdir
        self.trained = trained
        super().__init__(signum)
        self.args = (self.describe(),)

    def describe(self, command=None):
        """One line: where it stopped, what is kept, and the command that resumes (`command`,
        default: rerun the same command)."""
        resume = f"run {command}" if command else "rerun the same command"
        if self.checkpoint is None:
            return (
                f"{self.what} at step {self.step}, before the first checkpoint: nothing is kept in "
                f"{self.workdir}; {resume} to start again"
            )
        kept = f"the last checkpoint ({_position(self.checkpoint)})"
        if self.trained:
            return (
                f"{self.what} after the last step ({self.step}), while the generator and the summary were written; "
                f"{kept} is kept in {self.backup_dir}; {resume} to write them"
            )
        if self.checkpoint["steps"] == self.step:
            return f"{self.what} at step {self.step}, saved in {self.backup_dir}; {resume} to resume from it"
        return f"{self.what} at step {self.step}; {kept} is kept in {self.backup_dir}; {resume} to resume from it"


def _position(checkpoint):
    """Where a checkpoint lies: "epoch 2, step 100" at an epoch's end, "step 120, 20 steps into epoch 3" within one."""
    within = checkpoint.get("epoch_steps", 0)
    if within:
        return f"step {checkpoint['steps']}, {within} steps into epoch {checkpoint['epoch'] + 1}"
    return f"epoch {checkpoint['epoch']}, step {checkpoint['steps']}"


class Signals:
    """While installed (`with Signals():`), SIGINT and SIGTERM raise `Interrupted` in the main
    thread, at once or, inside `deferred()`, when the block ends. Once one was raised (the run is
    stopping: saving its checkpoint), further signals are ignored, and so is a signal while one
    is pending. Installed only from the main thread (Python delivers signals there); elsewhere it
    installs nothing.

    Python runs a signal's handler only between its own bytecodes, never inside a call into
    TensorFlow: the step (or the steps of one traced call) in progress completes before the
    `Interrupted` is raised, so the model is always between two steps. (Under a periodic mix a
    train-function call may make several such calls; the checkpoint goes by the G update count,
    so a stop between them resumes exactly.)

    Attributes:
      received: the number of the signal pending in a `deferred()` block, or None.
      stopping: whether an `Interrupted` was raised (`stop`).
    """

    def __init__(self):
        self.received = None
        self.stopping = False
        self._deferring = 0
        self._previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for signum in STOPPING:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info):
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def stop(self, signum):
        """Raises `Interrupted(signum)`, the pending signal forgotten and later ones ignored."""
        self.received, self.stopping = None, True
        raise Interrupted(signum)

    @contextlib.contextmanager
    def deferred(self):
        """Within it a signal waits: a checkpoint being written completes, then `Interrupted` is raised."""
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1
        if not self._deferring and self.received is not None:
            self.stop(self.received)

    def _handle(self, signum, frame):
        del frame
        if self.stopping or self.received is not None:
            return  # A second Ctrl-C must not break the checkpoint being written.
        if not self._deferring:
            self.stop(signum)
        self.received = signum
