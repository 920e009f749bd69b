"""tf_fusedprop: train GANs with one forward and one backward pass (FusedProp), in TF2/Keras 3.

The core: `ops` (custom-gradient primitives), `losses`, `layers` (InvFusedProp-capable
layers), `steps` (one step of every training form), `FusedPropGAN` (a Keras model that
trains with `fit`), `GradientAccumulator`, and reference `networks`. The experiment harness
behind `train.py` (data, metrics, callbacks, the training job) lives in
`tf_fusedprop.experiment`.
"""

from tf_fusedprop import layers, losses, ops, steps
from tf_fusedprop.accumulation import GradientAccumulator
from tf_fusedprop.gan import FusedPropGAN
from tf_fusedprop.ops import scale_gradient
from tf_fusedprop.steps import FORMS, compute_gradients

__all__ = [
    "FORMS",
    "FusedPropGAN",
    "GradientAccumulator",
    "compute_gradients",
    "layers",
    "losses",
    "ops",
    "scale_gradient",
    "steps",
]
__version__ = "0.1.0"
