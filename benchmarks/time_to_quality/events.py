"""A run's history read back from its TensorBoard events, for the runs whose summary.json has
none: one that raised before writing it, or one resumed across processes (each process's
summary holds its own seconds only)."""

import glob
import os

import tensorflow as tf

#: The scalars `callbacks.Scalars` writes while training: not evaluation metrics.
_TRAINING_SCALARS = {
    "d_loss",
    "g_loss",
    "real_logit",
    "fake_logit",
    "fake_spread",
    "fake_coverage",
    "real_sign",
    "real_above_held_out",
    "augment_p",
    "stray",
    "stray_cosine",
    "alternated",
    "steps_per_second",
}


def history_from_events(workdir):
    """The history of a run that left no summary.json, from its TensorBoard scalars: metrics
    per epoch, training seconds from steps/s, finite while d_loss and g_loss were written
    (`callbacks.Scalars` skips non-finite values)."""
    scalars = {}
    for path in sorted(glob.glob(os.path.join(workdir, "logs", "events.out.tfevents.*"))):
        for raw in tf.data.TFRecordDataset(path):
            event = tf.compat.v1.Event.FromString(raw.numpy())
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name == "scalars":
                    scalars.setdefault(value.tag, {})[event.step] = float(tf.make_ndarray(value.tensor))
    history, seconds, previous, finite = [], 0.0, 0, True
    for step in sorted(scalars.get("steps_per_second", {})):
        seconds += (step - previous) / scalars["steps_per_second"][step]
        previous = step
        finite = finite and all(step in scalars.get(key, {}) for key in ("d_loss", "g_loss"))
        metrics = {
            tag: values[step] for tag, values in scalars.items() if tag not in _TRAINING_SCALARS and step in values
        }
        if metrics:
            history.append(
                {"epoch": None, "step": step, "train_seconds": seconds, "metrics": metrics, "finite": finite}
            )
    return history
