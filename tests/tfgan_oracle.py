"""TF-GAN's loss and metric modules as an independent oracle, loaded from their files.

`tensorflow-gan` 2.1.0 (in the test extra) fails at `import tensorflow_gan` on TF >= 2.16: its
package `__init__` imports the removed `tf.estimator`. Its pure modules do not need it, so they
are executed from the installed files under empty parent packages, without running any
`__init__`. `classifier_metrics` also needs tensorflow-probability, which the test extra installs
too; of it, the module uses `tfp.stats.covariance` alone, so that one module of tfp is executed
from its installed file the same way (tfp's own `__init__` imports all of tfp and tf-keras:
tens of seconds on 2 cores for one function).
"""

import importlib
import importlib.util
import os
import sys
import types

_ROOT = "tensorflow_gan"


def _package_dir():
    if _ROOT in sys.modules:  # Our empty package (TF-GAN's own __init__ fails to import).
        return sys.modules[_ROOT].__path__[0]
    spec = importlib.util.find_spec(_ROOT)  # Finds the top-level package without importing it.
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("tensorflow-gan is not installed (pip install -e '.[test]')")
    return spec.submodule_search_locations[0]


def _ensure_parents(directory, dotted):
    """Empty package modules for `dotted` and its parents, so their `__init__`s never run."""
    parts = dotted.split(".")
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [os.path.join(directory, *parts[1:i])]
            sys.modules[name] = package


_TFP = "tensorflow_probability"


def _lean_probability():
    """`tensorflow_probability` as `classifier_metrics` uses it (`tfp.stats.covariance`): tfp's
    own `sample_stats` module under empty parent packages (none of tfp's `__init__`s run)."""
    if _TFP in sys.modules and hasattr(sys.modules[_TFP], "stats"):
        return
    spec = importlib.util.find_spec(_TFP)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("tensorflow-probability is not installed (pip install -e '.[test]')")
    directory = spec.submodule_search_locations[0]
    for package in ("python.stats", "python.internal", "python.math"):
        _ensure_parents(directory, f"{_TFP}.{package}")
    sample_stats = importlib.import_module(f"{_TFP}.python.stats.sample_stats")
    stats = sys.modules[f"{_TFP}.python.stats"]
    stats.covariance = sample_stats.covariance  # what tfp's stats/__init__ exports under that name
    sys.modules[_TFP].stats = stats


def _load(relative_name):
    """Executes `tensorflow_gan.<relative_name>` from its file (once) and returns the module."""
    name = f"{_ROOT}.{relative_name}"
    if name in sys.modules:
        return sys.modules[name]
    directory = _package_dir()
    _ensure_parents(directory, name.rsplit(".", 1)[0])
    path = os.path.join(directory, *relative_name.split(".")) + ".py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load(relative_name):
    """`(module, None)`, or `(None, reason)` when it cannot be loaded (for `skipTest(reason)`).

    Args:
      relative_name: e.g. `"python.losses.losses_impl"`, `"python.eval.classifier_metrics"`.
    """
    try:
        for dependency in ("python.contrib_utils", "python.eval.eval_utils"):
            _load(dependency)
        if relative_name == "python.eval.classifier_metrics":
            _lean_probability()
        return _load(relative_name), None
    except Exception as err:  # noqa: BLE001 - any failure is a reason to skip, stated.
        return None, f"TF-GAN's {relative_name} cannot be loaded here: {type(err).__name__}: {err}"


def require(test, relative_name, environ=os.environ):
    """The module, for `test` (a `unittest.TestCase`): where it cannot be loaded, the test is
    skipped with the reason, but fails under CI (`CI` set), whose install must provide the
    oracle: a broken install would otherwise pass there by skipping what it should check."""
    module, reason = load(relative_name)
    if module is None:
        if environ.get("CI"):
            test.fail(f"{reason} (CI is set: the test extra must install the oracle)")
        test.skipTest(reason)
    return module
