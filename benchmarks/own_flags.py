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
