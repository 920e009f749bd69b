"""Building blocks of class-conditional GANs (SNGAN-projection lineage).

* `ConditionalBatchNormalization`: BatchNorm whose scale and offset are looked up per class
  (de Vries et al. 2017; Miyato & Koyama 2018), the generator's conditioning.
* `projection_logits`: the projection discriminator's output (Miyato & Koyama, ICLR 2018),
  `y = psi(h) + <embed(label), h>`, with the class embedding a `tf_fusedprop.layers.Embedding`
  so that every training form, InvFusedProp included, stays exact.
* `labels_input`: the int32 label input of a conditional functional model.
"""

import keras

from tf_fusedprop import layers as fp_layers
from tf_fusedprop.networks.dtypes import variable_dtype

__all__ = ["ConditionalBatchNormalization", "batch_norm", "labels_input", "output_logits", "projection_logits"]


def labels_input():
    """`keras.Input` of one int32 class label per sample."""
    return keras.Input((), dtype="int32", name="labels")


@keras.saving.register_keras_serializable(package="tf_fusedprop")
class ConditionalBatchNormalization(keras.layers.Layer):
    """BatchNorm with a per-class scale and offset: `call([x, labels])`.

    `x` is normalised over all axes but the last by a `BatchNormalization(center=False,
    scale=False)`; then `gamma[label] * x + beta[label]` (gamma starts at 1, beta at 0).

    Args:
      num_classes: the number of classes.
      **kwargs: `BatchNormalization` options (`momentum`, `epsilon`) and layer options.
    """

    def __init__(self, num_classes, momentum=0.99, epsilon=1e-3, **kwargs):
        super().__init__(**kwargs)
        self.num_classes, self.momentum, self.epsilon = int(num_classes), momentum, epsilon
        self.normalize = keras.layers.BatchNormalization(
            center=False, scale=False, momentum=momentum, epsilon=epsilon, dtype=self.dtype_policy
        )

    def build(self, input_shape):
        features = input_shape[0][-1]
        self.normalize.build(input_shape[0])
        self.gamma = keras.layers.Embedding(
            self.num_classes, features, embeddings_initializer="ones", dtype=self.dtype_policy
        )
        self.beta = keras.layers.Embedding(
            self.num_classes, features, embeddings_initializer="zeros", dtype=self.dtype_policy
        )
        self.gamma.build(input_shape[1])
        self.beta.build(input_shape[1])

    def call(self, inputs, training=None):
        x, labels = inputs
        x = self.normalize(x, training=training)
        shape = [-1] + [1] * (len(x.shape) - 2) + [x.shape[-1]]
        gamma = keras.ops.reshape(self.gamma(labels), shape)
        beta = keras.ops.reshape(self.beta(labels), shape)
        return x * keras.ops.cast(gamma, x.dtype) + keras.ops.cast(beta, x.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape[0]

    def get_config(self):
        return {
            **super().get_config(),
            "num_classes": self.num_classes,
            "momentum": self.momentum,
            "epsilon": self.epsilon,
        }


def projection_logits(features, labels, num_classes, spectral_norm, dtype=None):
    """`Dense(1)(features) + <Embedding(labels), features>`: a projection discriminator's logit.

    Args:
      features: `(batch, d)` features (the discriminator's last hidden layer).
      labels: `(batch,)` int class labels (a `labels_input()`).
      num_classes: the number of classes.
      spectral_norm: spectrally normalize the Dense and the embedding (SNGAN-projection).
      dtype: the dtype policy of the network; the head computes in its variable dtype.

    Returns:
      The `(batch, 1)` logits tensor.
    """
    head_dtype = variable_dtype(dtype)
    unconditional = fp_layers.Dense(1, spectral_norm=spectral_norm, dtype=head_dtype)(features)
    embedded = fp_layers.Embedding(num_classes, features.shape[-1], spectral_norm=spectral_norm, dtype=head_dtype)(
        labels
    )
    projected = keras.layers.Dot(axes=1, dtype=head_dtype)([embedded, features])
    return keras.layers.Add(dtype=head_dtype)([unconditional, projected])


def batch_norm(x, labels, num_classes, dtype=None):
    """BatchNorm of `x`, class-conditional when `labels` is given (a generator's normalization)."""
    if labels is None:
        return keras.layers.BatchNormalization(dtype=dtype)(x)
    return ConditionalBatchNormalization(num_classes, dtype=dtype)([x, labels])


def output_logits(features, labels, num_classes, spectral_norm, dtype=None):
    """A discriminator's last layer: `Dense(1)`, or the projection head when `labels` is given.

    The head computes in the policy's variable dtype, so logits stay float32 under mixed precision.
    """
    if labels is None:
        return fp_layers.Dense(1, spectral_norm=spectral_norm, dtype=variable_dtype(dtype))(features)
    return projection_logits(features, labels, num_classes, spectral_norm, dtype)
