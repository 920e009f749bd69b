"""Ways to compute a 2-D convolution's weight gradient, and the per-layer choice between them.

TensorFlow computes `dW` of `y = conv2d(x, w)` with one op, `Conv2DBackpropFilter`. On AMD
CPUs with AVX512_BF16 and no AMX its bfloat16 kernel is slower than its float32 one on deep,
small layers (Zen 5: 26 against 18 ms on SNGAN D's 8x8x256 k4 s2 layer at batch 128;
docs/performance.md), while TensorFlow's forward convolution and its matmuls are fast in
bfloat16 everywhere. The same sum can be written with those:

* `"native"`: `Conv2DBackpropFilter` (what TensorFlow's own gradient runs), except for a 1x1
  kernel with a stride > 1, whose one tap is one matmul (`"taps"`): there TensorFlow 2.21's
  oneDNN kernel on AVX2-only CPUs returns wrong gradients, from run to run (up to 0.7 of the
  gradient's size at 3 or 5 channels; oneDNN is on under `train.py`).
* `"forward_conv"`: `dW[i, j, c, o] = sum_{n, p, q} x[n, s*p + i, s*q + j, c] * dy[n, p, q, o]`
  is a forward convolution of the padded input with its batch and channel axes swapped
  (`[C, H, W, N]`) by `dy` taken as the filter (`[Ho, Wo, N, O]`), dilated by the stride.
* `"taps"`: one `[C, M] x [M, O]` matmul per kernel tap over the strided slice of x that the tap
  multiplies (`M = N * Ho * Wo`).

All give the same gradient up to the dtype's rounding. Which is fastest depends on the CPU, the
dtype and the layer's shape, so under the `"auto"` policy `choose` times them on this machine
for the narrow dtypes (bfloat16, float16) on CPUs; float32/float64 and GPUs keep the native
kernel, which measured best or equal on every layer in float32. A layer's `weight_gradient`
argument, `set_policy` and the `TF_FUSEDPROP_WEIGHT_GRADIENT` environment variable override the
choice.

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

from tf_fusedprop import machine

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
    "conv_output_size",
    "explicit_padding",
    "machine_cache_file",
    "policy",
    "resolve",
    "set_policy",
    "table_file",
    "weight_gradient",
]

#: The formulations of the weight gradient (see the module docstring).
WEIGHT_GRADIENTS = ("native", "forward_conv", "taps")
#: A layer's or the process's setting: `"auto"` (measure where it can pay) or one formulation.
POLICIES = ("auto",) + WEIGHT_GRADIENTS
ENVIRONMENT_VARIABLE = "TF_FUSEDPROP_WEIGHT_GRADIENT"
#: Another formulation replaces the native kernel only when its median is this much faster.
MARGIN = 0.9
#: The batch timed for a layer whose batch size is not static.
DEFAULT_BATCH = 64


def explicit_padding(size, kernel, stride, padding):
    """`(before, after)` padding of one spatial axis, as TensorFlow pads a convolution."""
    if padding == "VALID":
        return 0, 0
    total = max((conv_output_size(size, kernel, stride, padding) - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


def conv_output_size(size, kernel, stride, padding):
    """Output length of one spatial axis of an undilated convolution."""
    return -(-size // stride) if padding == "SAME" else (size - kernel) // stride + 1


def _padded(x, kernel_hw, strides, padding):
    pads = [list(explicit_padding(x.shape[a], kernel_hw[a - 1], strides[a - 1], padding)) for a in (1, 2)]
    if pads == [[0, 0], [0, 0]]:
        return x
    return tf.pad(x, [[0, 0], pads[0], pads[1], [0, 0]])


def _native(x, dy, kernel_shape, strides, padding):
    if tuple(kernel_shape[:2]) == (1, 1) and tuple(strides) != (1, 1):
        return _taps(x, dy, kernel_shape, strides, padding)
    return tf.raw_ops.Conv2DBackpropFilter(
        input=x,
        filter_sizes=list(kernel_shape),
        out_backprop=dy,
        strides=[1, strides[0], strides[1], 1],
        padding=padding,
    )


def _forward_conv(x, dy, kernel_shape, strides, padding):
    kh, kw, _, _ = kernel_shape
    dw = tf.nn.conv2d(
        tf.transpose(_padded(x, (kh, kw), strides, padding), [3, 1, 2, 0]),  # [C, H, W, N]
        tf.transpose(dy, [1, 2, 0, 3]),  # [Ho, Wo, N, O]: the output gradient as the filter
        strides=1,
        padding="VALID",
        dilations=[1, strides[0], strides[1], 1],
    )  # [C, >= kh, >= kw, O]: the rows and columns a stride skips at the end are no taps
    return tf.transpose(dw[:, :kh, :kw, :], [1, 2, 0, 3])


def _taps(x, dy, kernel_shape, strides, padding):
    kh, kw, c, o = kernel_shape
    x = _padded(x, (kh, kw), strides, padding)
    ho, wo = dy.shape[1], dy.shape[2]
    dy2 = tf.reshape(dy, [-1, o])
    dw = [
        tf.matmul(
            tf.reshape(
                x[:, i : i + (ho - 1) * strides[0] + 1 : strides[0], j : j + (wo - 1) * strides[1] + 1 : strides[1], :],
                [-1, c],
            ),
            dy2,
            transpose_a=True,
        )
        for i in range(kh)
        for j in range(kw)
    ]
    return tf.reshape(tf.stack(dw), [kh, kw, c, o])


_FORMULATIONS = {"native": _native, "forward_conv": _forward_conv, "taps": _taps}


def weight_gradient(x, dy, kernel_shape, strides, padding, formulation="native"):
    """The gradient of `sum(conv2d(x, w) * dy)` with respect to `w` (NHWC, HWIO, no dilation).

    Args:
      x: the convolution's input `[N, H, W, C]` (static H, W).
      dy: the gradient of its output `[N, Ho, Wo, O]` (static Ho, Wo).
      kernel_shape: `(kh, kw, C, O)`.
      strides: `(h, w)`.
      padding: "SAME" or "VALID".
      formulation: one of `WEIGHT_GRADIENTS`, or "auto" for `choose`'s (timed on this machine
        for x's static shape and dtype, once per process).

    Returns:
      `[kh, kw, C, O]` in `dy`'s dtype.
    """
    if formulation == "auto":
        formulation = choose(x.shape, kernel_shape, strides, padding, x.dtype)
    if formulation not in _FORMULATIONS:
        raise ValueError(f"Unknown weight-gradient formulation {formulation!r}. Valid: {', '.join(WEIGHT_GRADIENTS)}.")
    shape = tuple(int(d) for d in kernel_shape)
    return _FORMULATIONS[formulation](x, dy, shape, tuple(int(s) for s in strides), padding.upper())


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
