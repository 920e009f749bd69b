"""A benchmark run from Python (a test, a notebook) with an argv of its own: its command-line
flags defined on a fresh `absl.flags.FlagValues` and parsed from that argv, so that two
benchmarks defining the same flag names (`--images`, `--batch_size`) can run in one process."""

from absl import flags


def parse(define_flags, argv):
    """`define_flags(values)`'s flags on a fresh `FlagValues`, parsed from `argv` (program name
    first); returns them.

    Raises:
      absl.flags.Error: `argv` does not parse.
    """
    values = flags.FlagValues()
    define_flags(values)
    values(argv)
    return values


def entry_points(define_flags, body):
    """`(run, main)` of a benchmark whose work is `body(values)` (its flags' values):
    `run(argv)` for Python (a test, a notebook) parses `argv` (program name first) into flags of
    its own and prints what the command line prints; `main(argv)` is absl's `app.run` entry,
    reading the command line's flags (`define_flags()` defines them before `app.run`)."""

    def run(argv):
        """The benchmark from Python: `argv` (program name first) parsed into flags of its own, as
        the command line's; prints what the command line prints."""
        body(parse(define_flags, argv))

    def main(argv):
        """The command line's entry (absl's `app.run`): the flags already parsed."""
        del argv
        body(flags.FLAGS)

    return run, main
