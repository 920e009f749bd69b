"""Ctrl-C: a run stopped by the user says so in one line, keeps its last checkpoint, and resumes.

`train_lib` turns a `KeyboardInterrupt` during `fit`, or after it while the run's generator and
summary are written, into `TrainingInterrupted`, which knows
the step it stopped at and the last checkpoint (`callbacks.BackupAndRestore` saves one per
epoch, atomically, so an interrupt never leaves a broken one); `train.py` prints
`describe(command)` and exits with status 130 (the shell's convention for SIGINT). Rerunning
the same command resumes from the checkpoint (the steps of the interrupted epoch are trained
again, from the same batches and latents).
"""

__all__ = ["TrainingInterrupted"]


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped by Ctrl-C (SIGINT).

    Attributes:
      step: the G updates done when it stopped.
      checkpoint: the last checkpoint's metadata (`{"epoch", "steps", "weights"}`), or None.
      backup_dir: the checkpoint's directory.
      workdir: the run's directory.
      trained: whether every epoch was trained (it stopped while the generator and the summary
        were written); rerunning then trains nothing and writes them.
    """

    def __init__(self, step, checkpoint, backup_dir, workdir, trained=False):
        self.step, self.checkpoint, self.backup_dir, self.workdir = int(step), checkpoint, backup_dir, workdir
        self.trained = trained
        super().__init__(self.describe())

    def describe(self, command=None):
        """One line: where it stopped, what is kept, and the command that resumes (`command`,
        default: rerun the same command)."""
        resume = f"run {command}" if command else "rerun the same command"
        if self.checkpoint is None:
            return (
                f"interrupted at step {self.step}, before the first checkpoint: nothing is kept in "
                f"{self.workdir}; {resume} to start again"
            )
        if self.trained:
            return (
                f"interrupted after the last step ({self.step}), while the generator and the summary were written; "
                f"the last checkpoint (epoch {self.checkpoint['epoch']}, step {self.checkpoint['steps']}) is kept in "
                f"{self.backup_dir}; {resume} to write them"
            )
        return (
            f"interrupted at step {self.step}; the last checkpoint (epoch {self.checkpoint['epoch']}, step "
            f"{self.checkpoint['steps']}) is kept in {self.backup_dir}; {resume} to resume from it"
        )
