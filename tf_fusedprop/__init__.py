"""tf_fusedprop: train GANs with one forward and one backward pass (FusedProp), in TF2/Keras 3.

The core: `ops` (custom-gradient primitives), `losses`, `layers` (InvFusedProp-capable
layers), `steps` (the pure one-step functions), `forms` (what one training step does, per
form), `schedules` (which form trains each update of a run), `FusedPropGAN` (a Keras model that trains with `fit`) with its step plugins (`R1`,
`GradientPenalty`, `DiffAugment`, `EMA`, `Lookahead`, `StrayProbe`), `update` (what follows the gradients),
`GradientAccumulator`, and reference `networks`. The experiment harness behind `train.py`
(data, metrics, callbacks, the training job) lives in `tf_fusedprop.experiment`.
"""

import sys as _sys

from tf_fusedprop import _startup
from tf_fusedprop._version import __version__ as __version__
from tf_fusedprop.machine import cpu_flags as _cpu_flags

if (_note := _startup.onednn_note(_cpu_flags())) is not None:
    print(_note, file=_sys.stderr, flush=True)

with _startup.native_stderr_silenced(_startup.hide_native_logs()):
    import tensorflow as _tf

    _tf.config.list_physical_devices()  # the CUDA probe prints here, hidden
del _tf, _sys, _cpu_flags, _note

from tf_fusedprop import conv_weight_gradients, forms, layers, losses, ops, optimizers, schedules, steps  # noqa: E402
from tf_fusedprop.accumulation import GradientAccumulator  # noqa: E402
from tf_fusedprop.augment import DiffAugment  # noqa: E402
from tf_fusedprop.batch import Batch  # noqa: E402
from tf_fusedprop.ema import EMA  # noqa: E402
from tf_fusedprop.forms import FORMS, Alternating, Simultaneous, SinglePass, compute_gradients  # noqa: E402
from tf_fusedprop.gan import FusedPropGAN  # noqa: E402
from tf_fusedprop.lookahead import Lookahead  # noqa: E402
from tf_fusedprop.ops import scale_gradient  # noqa: E402
from tf_fusedprop.regularizers import R1, GradientPenalty  # noqa: E402
from tf_fusedprop.stray_probe import StrayProbe  # noqa: E402

__all__ = [
    "EMA",
    "FORMS",
    "Alternating",
    "Batch",
    "DiffAugment",
    "FusedPropGAN",
    "GradientAccumulator",
    "GradientPenalty",
    "Lookahead",
    "R1",
    "SinglePass",
    "Simultaneous",
    "StrayProbe",
    "compute_gradients",
    "conv_weight_gradients",
    "forms",
    "layers",
    "losses",
    "ops",
    "optimizers",
    "scale_gradient",
    "schedules",
    "steps",
]
