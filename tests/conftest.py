"""The suite's session settings: evaluation models cached in a temporary directory of the test
session (not the user's `~/.cache/tf_fusedprop`), also for the subprocesses tests start."""

import os
import tempfile

os.environ.setdefault("TF_FUSEDPROP_CACHE", tempfile.mkdtemp(prefix="tf_fusedprop-test-cache-"))
