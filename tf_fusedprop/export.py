"""Export a generator as a SavedModel with `serve(z)` or `serve(z, labels)`.

The directory also holds `fusedprop_export.json`, which says what was exported: which weights
(`"ema"`: the exponential moving average, or `"trained"`), the latent size, the classes of a
conditional generator, and the training step.
"""

import json
import os

import keras
import tensorflow as tf

__all__ = ["EXPORT_INFO", "export_generator", "read_export_info"]

#: The file written beside the SavedModel.
EXPORT_INFO = "fusedprop_export.json"


def export_generator(generator, directory, latent_dim, num_classes=None, info=None, latent_dtype="float32"):
    """Writes `generator` (inference mode) as a SavedModel in `directory`.

    Endpoints: `serve(z)` for an unconditional generator, `serve(z, labels)` (int32 class
    labels) for a conditional one; `serving_default` is the same signature. The signature fixes
    z's shape to `[batch, latent_dim]`: another shape is refused before anything runs, by a
    TypeError whose first line names the shape received and the shape expected.

    Args:
      generator: a Keras model from `z` (or `[z, labels]`) to samples.
      directory: the SavedModel directory (created).
      latent_dim: the size of z.
      num_classes: the classes of a conditional generator, or None.
      info: extra JSON-serialisable facts for `fusedprop_export.json`.
      latent_dtype: the dtype of z (the generator's input dtype).
    """
    archive = keras.export.ExportArchive()
    archive.track(generator)
    z_spec = tf.TensorSpec([None, latent_dim], latent_dtype, name="z")
    if num_classes is None:
        archive.add_endpoint("serve", lambda z: generator(z, training=False), input_signature=[z_spec])
    else:
        labels_spec = tf.TensorSpec([None], tf.int32, name="labels")
        archive.add_endpoint(
            "serve", lambda z, labels: generator([z, labels], training=False), input_signature=[z_spec, labels_spec]
        )
    archive.write_out(directory, verbose=False)
    facts = {
        "signature": "serve(z)" if num_classes is None else "serve(z, labels)",
        "latent_dim": int(latent_dim),
        "num_classes": num_classes,
        **(info or {}),
    }
    with open(os.path.join(directory, EXPORT_INFO), "w") as f:
        json.dump(facts, f, indent=2, sort_keys=True)
        f.write("\n")


def read_export_info(directory):
    """The facts `export_generator` wrote beside the SavedModel in `directory`."""
    with open(os.path.join(directory, EXPORT_INFO)) as f:
        return json.load(f)
