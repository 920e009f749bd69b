"""tf_fusedprop: train GANs with one forward and one backward pass (FusedProp), in TF2/Keras 3."""

from tf_fusedprop import layers, losses, ops
from tf_fusedprop.accumulation import GradientAccumulator
from tf_fusedprop.gan import FusedPropGAN
from tf_fusedprop.gradients import compute_gradients
from tf_fusedprop.ops import scale_gradient

__all__ = [
    "FusedPropGAN",
    "GradientAccumulator",
    "compute_gradients",
    "layers",
    "losses",
    "ops",
    "scale_gradient",
]
__version__ = "0.1.0"
