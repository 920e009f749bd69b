"""The suite's session settings: evaluation models cached in a temporary directory of the test
session (not the user's `~/.cache/tf_fusedprop`), also for the subprocesses tests start; and
the CPU split into two logical devices before TensorFlow initialises them, so that tests
train under a two-replica `MirroredStrategy` in this process (`testing_utils.two_cpu_strategy`).
Ops outside a strategy run on the first, as on an unsplit CPU."""

import os
import tempfile

os.environ.setdefault("TF_FUSEDPROP_CACHE", tempfile.mkdtemp(prefix="tf_fusedprop-test-cache-"))


def pytest_configure(config):
    """Splits the CPU where tests run: in this process, unless it only hands the tests to
    pytest-xdist's workers (then TensorFlow is not even imported here)."""
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        return
    import tf_fusedprop  # noqa: F401 -- first: TensorFlow loads without its native start-up lines
    from tests import testing_utils as tu

    tu.split_cpu_in_two()
