"""The suite's session settings: evaluation models cached in a temporary directory of the test
session (not the user's `~/.cache/tf_fusedprop`), also for the subprocesses tests start; and
the CPU split into two logical devices before TensorFlow initialises them, so that tests
train under a two-replica `MirroredStrategy` in this process (`testing_utils.two_cpu_strategy`).
Ops outside a strategy run on the first, as on an unsplit CPU. And oneDNN on, as `train.py` turns
it on for its users: TensorFlow reads the setting once, when it is imported, so without it here a
training run in this process (oneDNN off on an AVX2-only CPU) and one in a subprocess started after
`train.run` set it (on) would round differently, and a resumed run would not equal a straight one;
the same for train.py's one inter-op thread.
And no test fetches TF-GAN's Inception from the internet: `inception_path="auto"` (the CIFAR-10 and
images configs' default) is pointed at a file that does not exist, so it takes the offline path at
once (the tests of the fetch serve a stand-in module themselves). The cache directory is made
by the first process (pytest, or pytest-xdist's controller, whose workers inherit it) and removed
when that process ends."""

import atexit
import os
import shutil
import sys
import tempfile

import pytest

_SESSION_CACHE = None
if "TF_FUSEDPROP_CACHE" not in os.environ:
    _SESSION_CACHE = tempfile.mkdtemp(prefix="tf_fusedprop-test-cache-")
    os.environ["TF_FUSEDPROP_CACHE"] = _SESSION_CACHE
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")  # as train.py: one seed, one run (docs/guide.md)
os.environ.setdefault(
    "TF_FUSEDPROP_INCEPTION_URL", "file://" + os.path.join(os.environ["TF_FUSEDPROP_CACHE"], "no-inception.tar.gz")
)


def pytest_configure(config):
    """Splits the CPU where tests run: in this process, unless it only hands the tests to
    pytest-xdist's workers (then TensorFlow is not even imported here)."""
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        return
    import tf_fusedprop  # noqa: F401 -- first: TensorFlow loads without its native start-up lines
    from tests import testing_utils as tu

    tu.split_cpu_in_two()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Removes the session's cache; and ends a pytest-xdist worker as soon as it is done (its
    results are sent): Python's teardown of a process that holds TensorFlow and a thousand tests'
    graphs takes seconds that nobody waits for usefully. Exit handlers (temporary directories) run."""
    if _SESSION_CACHE is not None:
        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)
    if hasattr(config, "workerinput"):
        sys.stdout.flush()
        sys.stderr.flush()
        atexit._run_exitfuncs()
        os._exit(0)
