"""TensorBoard records written with core TensorFlow only.

TensorBoard's own `tf.summary.scalar/image/text` need the tensorboard package, which
TensorFlow no longer installs; these write the same records (the plugin names in their
metadata tell TensorBoard how to show them) to the default `tf.summary` writer.
"""

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import summary_pb2

__all__ = ["summary_image", "summary_scalar", "summary_text"]


def _plugin(name):
    return summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=name))


def summary_scalar(name, value, step):
    """Writes a scalar to the default `tf.summary` writer, as TensorBoard's scalars plugin reads it."""
    return tf.summary.write(name, tf.constant(value, tf.float32), step=step, metadata=_plugin("scalars"))


def summary_image(name, image, step):
    """Writes a uint8 `[height, width, channels]` image, as TensorBoard's images plugin reads it."""
    image = np.asarray(image, dtype=np.uint8)
    tensor = tf.stack([tf.as_string(image.shape[1]), tf.as_string(image.shape[0]), tf.io.encode_png(image)])
    return tf.summary.write(name, tensor, step=step, metadata=_plugin("images"))


def summary_text(name, text, step):
    """Writes a (markdown) string, as TensorBoard's text plugin reads it."""
    return tf.summary.write(name, tf.constant(text), step=step, metadata=_plugin("text"))
