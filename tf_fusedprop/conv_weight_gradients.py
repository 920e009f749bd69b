"""The per-layer choice between the formulations of a 2-D convolution's weight gradient.

TensorFlow computes `dW` of `y = conv2d(x, w)` with one op, `Conv2DBackpropFilter`. On AMD
CPUs with AVX512_BF16 and no AMX its bfloat16 kernel is slower than its float32 one on deep,
small layers (Zen 5: 26 against 18 ms on SNGAN D's 8x8x256 k4 s2 layer at batch 128;
docs/performance.md), while TensorFlow's forward convolution and its matmuls are fast in
bfloat16 everywhere: `tf_fusedprop.weight_gradient_formulations` writes the same sum with
those (`"native"`, `"forward_conv"`, `"taps"`; pure maths, what `ops` computes). Which is
fastest depends on the CPU, the dtype and the layer's shape, so under the `"auto"` policy
`choose` times them on this machine for the narrow dtypes (bfloat16, float16) on CPUs;
float32/float64 and GPUs keep the native kernel, which measured best or equal on every layer
in float32. A layer's `weight_gradient` argument, `set_policy` and the
`TF_FUSEDPROP_WEIGHT_GRADIENT` environment variable override the choice.

A layer asks `formulation` for a name when it calls its op (at trace time, from the static
shapes of the convolution), so that the op and its gradient only ever see a formulation's name:
no gradient function times, locks or reads a file.

The formulations round differently, a GAN's dynamics amplify the difference, and timing on a
busy machine is noisy, so a choice is timed once per machine, not once per process: it is kept
in the user cache (`machine_cache_file`: `weight_gradients/<key>.json` under
`machine.user_cache_dir()`, keyed by `machine.fingerprint()`: CPU model and flags, cores,
TensorFlow's version, oneDNN, this package's version) and read by every later process there,
so two runs of one seed on one machine train alike. A run that must resume exactly on another
machine also keeps its own choices in a file (`table_file`; `train.py` keeps them in the run's
directory), which wins over the machine's.
"""

import contextlib
import json
import os
import statistics
import sys
import threading
import time

import tensorflow as tf
from keras.src.backend.common import symbolic_scope

from tf_fusedprop import machine
from tf_fusedprop.weight_gradient_formulations import WEIGHT_GRADIENTS, conv_output_size, weight_gradient

try:
    import fcntl
except ImportError:  # not on POSIX: processes that time at once may each keep their own choice
    fcntl = None

__all__ = [
    "POLICIES",
    "WEIGHT_GRADIENTS",
    "check_policy",
    "choose",
    "chosen",
    "formulation",
    "machine_cache_file",
    "policy",
    "resolve",
    "set_policy",
    "table_file",
]

#: A layer's or the process's setting: `"auto"` (measure where it can pay) or one formulation.
POLICIES = ("auto",) + WEIGHT_GRADIENTS
ENVIRONMENT_VARIABLE = "TF_FUSEDPROP_WEIGHT_GRADIENT"
#: Another formulation replaces the native kernel only when its median is this much faster.
MARGIN = 0.9
#: The batch timed for a layer whose batch size is not static.
DEFAULT_BATCH = 64


def check_policy(value, name="weight_gradient"):
    """Returns `value` if it is one of `POLICIES`; raises a one-line ValueError otherwise."""
    if value not in POLICIES:
        raise ValueError(f"Unknown {name}. Received: {name}={value!r}. Valid: {', '.join(POLICIES)}.")
    return value


_policy = None


def policy():
    """The process's policy: `set_policy`'s, else `$TF_FUSEDPROP_WEIGHT_GRADIENT`, else "auto"."""
    if _policy is not None:
        return _policy
    return check_policy(os.environ.get(ENVIRONMENT_VARIABLE, "auto"), ENVIRONMENT_VARIABLE)


def set_policy(value):
    """Sets the process's policy for layers left at `weight_gradient="auto"`; None unsets it."""
    global _policy
    _policy = None if value is None else check_policy(value, "policy")


def resolve(setting, dtype):
    """What a layer with `weight_gradient=setting` computes in `dtype`, before any timing.

    A formulation name for a fixed choice, or "auto" where `choose` will time the formulations
    (a narrow dtype on a machine without GPUs, under the "auto" policy).
    """
    setting = check_policy(setting)
    if setting == "auto":
        setting = policy()
    if setting != "auto":
        return setting
    if tf.as_dtype(dtype).size >= 4 or tf.config.list_logical_devices("GPU"):
        return "native"
    return "auto"


def formulation(setting, x_shape, kernel_shape, strides, padding, dtype, training=None):
    """The formulation a layer with `weight_gradient=setting` computes a convolution's kernel
    gradient with: `resolve`'s, timed by `choose` for this convolution's static shapes where
    that says "auto".

    Args:
      setting: one of `POLICIES`.
      x_shape: the convolution's input shape `[N, H, W, C]` (for a transposed convolution, the
        shape of its output, the weight gradient's input); N may be None.
      kernel_shape: `(kh, kw, C, O)` (a transposed convolution's kernel as stored).
      strides: `(h, w)`.
      padding: "same"/"SAME" or "valid"/"VALID".
      dtype: the convolution's compute dtype.
      training: the layer call's; False (inference: sampling, evaluation, export) takes no
        gradient.

    Returns:
      One of `WEIGHT_GRADIENTS`. Where no gradient is taken of the call (`training=False`, or
      while Keras builds a model symbolically) an "auto" setting answers "native" without
      timing: the forward pass is the same whatever the kernel gradient's formulation.
    """
    resolved = resolve(setting, dtype)
    if resolved != "auto":
        return resolved
    if training is False or symbolic_scope.in_symbolic_scope():
        return "native"
    return choose(x_shape, kernel_shape, strides, padding, dtype)


_chosen = {}
_lock = threading.Lock()
_table = {"path": None, "saved": set(), "used": set()}


def _key_text(key):
    x_shape, kernel_shape, strides, padding, dtype = key
    return " ".join(["x".join(map(str, dims)) for dims in (x_shape, kernel_shape, strides)] + [padding, dtype])


def _key_of(text):
    x_shape, kernel_shape, strides, padding, dtype = text.split(" ")
    dims = [tuple(int(d) for d in part.split("x")) for part in (x_shape, kernel_shape, strides)]
    return (*dims, padding, dtype)


@contextlib.contextmanager
def table_file(path):
    """Within it, the choices saved in the JSON file `path` (where it exists) are taken, and each
    choice used is saved there, so that a process which resumes a run computes its weight
    gradients as the first one did.

    Raises:
      ValueError: the file is not such a table (one line, naming it).
    """
    try:
        _load_table(path)
        yield
    finally:
        with _lock:
            _table.update(path=None, saved=set(), used=set())


def _load_table(path):
    with _lock:
        _table.update(path=path, saved=set(), used=set())
        if not os.path.exists(path):
            return
        try:
            with open(path) as f:
                saved = {_key_of(text): formulation for text, formulation in json.load(f).items()}
        except (ValueError, TypeError, AttributeError) as err:
            raise ValueError(f"{path} is not a table of weight-gradient choices: {err}") from None
        if not set(saved.values()) <= set(WEIGHT_GRADIENTS):
            raise ValueError(f"{path} names formulations other than {', '.join(WEIGHT_GRADIENTS)}.")
        _chosen.update(saved)
        _table.update(saved=set(saved), used=set(saved))


def _save_table():
    try:
        _write_json(_table["path"], {_key_text(key): _chosen[key] for key in sorted(_table["used"])})
    except OSError as err:  # a full or read-only disk: the run goes on (its checkpoint will say so)
        _say(f"cannot keep this run's weight-gradient choices in {_table['path']} ({err.strerror or err}).")
        _remove_quietly(_table["path"] + ".tmp")
        return
    _table["saved"] = set(_table["used"])


def _remove_quietly(path):
    with contextlib.suppress(OSError):
        os.remove(path)


def _write_json(path, value):
    with open(path + ".tmp", "w") as f:
        json.dump(value, f, indent=1)
    os.replace(path + ".tmp", path)


def chosen():
    """`{(x shape, kernel shape, strides, padding, dtype): formulation}` chosen in this process."""
    with _lock:
        return dict(_chosen)


@tf.autograph.experimental.do_not_convert  # plain Python, also when a traced layer calls it
def choose(x_shape, kernel_shape, strides, padding, dtype, rounds=5):
    """The fastest formulation for this convolution on this machine, timed once per machine.

    Taken from this process's earlier choices (those of a `table_file` among them), else from
    this machine's cache (`machine_cache_file`), else timed now and added to that cache. The
    native kernel is kept unless another's median time is below `MARGIN` times its own. The
    timing runs eagerly (also when called while a `tf.function` is traced) on random tensors of
    the layer's shapes, `DEFAULT_BATCH` samples where the batch is not static.
    """
    batch = x_shape[0] if x_shape[0] is not None else DEFAULT_BATCH
    key = (
        (int(batch),) + tuple(int(d) for d in x_shape[1:]),
        tuple(int(d) for d in kernel_shape),
        tuple(int(s) for s in strides),
        padding.upper(),
        tf.as_dtype(dtype).name,
    )
    with _lock:
        if key not in _chosen:
            _chosen[key] = _machine_choice(key, rounds)
        if _table["path"] is not None and key not in _table["saved"]:
            _table["used"].add(key)
            _save_table()
        return _chosen[key]


def machine_cache_file(facts=None):
    """This machine's cache of timed choices: `weight_gradients/<key>.json` in the user cache,
    `<key>` naming `machine.fingerprint()` (or the `facts` given: another CPU, TensorFlow or
    oneDNN setting, another file, timed afresh)."""
    key = machine.fingerprint_key(machine.fingerprint() if facts is None else facts)
    return os.path.join(machine.user_cache_dir(), "weight_gradients", f"{key}.json")


def _machine_choice(key, rounds):
    """`key`'s formulation from this machine's cache, timed and added there if it has none."""
    facts = machine.fingerprint()
    path = machine_cache_file(facts)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with _machine_lock(path + ".lock"):
            choices = _read_machine_cache(path, facts)
            text = _key_text(key)
            if text not in choices:
                choices[text] = _timed(key, rounds)
                _write_json(path, {"machine": facts, "choices": choices})
            return choices[text]
    except OSError as err:
        _say(f"cannot keep weight-gradient choices in {path} ({err.strerror or err}); timing them in this process.")
        return _timed(key, rounds)


def _timed(key, rounds):
    with tf.init_scope():
        return _fastest(*key, rounds=rounds)


@contextlib.contextmanager
def _machine_lock(path):
    """Holds other processes that choose on this machine until this one has timed and saved."""
    if fcntl is None:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _read_machine_cache(path, facts):
    """The `{key text: formulation}` cached for `facts` in `path`; {} (said in one line) where it is
    damaged or was written for another machine."""
    if not os.path.exists(path):
        return {}
    try:
        with open(path) as f:
            cached = json.load(f)
        choices = dict(cached["choices"])
        problem = None
        if cached["machine"] != facts:
            problem = "was written for another machine or software"
        elif not set(choices.values()) <= set(WEIGHT_GRADIENTS):
            problem = f"names formulations other than {', '.join(WEIGHT_GRADIENTS)}"
        else:
            for text in choices:
                _key_of(text)
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        problem = f"is not a cache of weight-gradient choices ({type(err).__name__}: {err})"
    if problem is None:
        return choices
    _say(f"{path} {problem}; timing the formulations again.")
    return {}


def _say(line):
    print(f"tf_fusedprop: {line}", file=sys.stderr, flush=True)


def _fastest(x_shape, kernel_shape, strides, padding, dtype, rounds):
    out_hw = [conv_output_size(x_shape[a], kernel_shape[a - 1], strides[a - 1], padding) for a in (1, 2)]
    x = tf.cast(tf.random.stateless_normal(x_shape, seed=[1, 2]), dtype)
    dy = tf.cast(tf.random.stateless_normal([x_shape[0]] + out_hw + [kernel_shape[-1]], seed=[3, 4]), dtype)
    functions = {
        name: tf.function(lambda a, b, name=name: weight_gradient(a, b, kernel_shape, strides, padding, name))
        for name in WEIGHT_GRADIENTS
    }
    times = {name: [] for name in functions}
    for round_ in range(rounds + 1):
        for name in list(functions):
            start = time.perf_counter()
            functions[name](x, dy).numpy()
            if round_:  # the first round traces and warms up
                times[name].append(time.perf_counter() - start)
        if round_ == 1:  # drop what is hopeless after one timed call
            best = min(t[0] for t in times.values())
            for name in [n for n in functions if n != "native" and times[n][0] > 2 * best]:
                del functions[name], times[name]
    return _pick({name: statistics.median(t) for name, t in times.items()})


def _pick(medians):
    fastest = min(medians, key=medians.get)
    return fastest if medians[fastest] < MARGIN * medians["native"] else "native"
