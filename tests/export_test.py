"""export_generator: SavedModels with serve(z) / serve(z, labels), reloaded in a fresh process."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import tensorflow as tf

from tests import testing_utils as tu
from tf_fusedprop import export

RELOAD = textwrap.dedent("""
    import json, sys, numpy as np, tensorflow as tf
    outputs = {}
    for directory in sys.argv[1:]:
        inputs = np.load(directory + ".inputs.npz")
        model = tf.saved_model.load(directory)
        args = [tf.constant(inputs["z"])] + ([tf.constant(inputs["labels"])] if "labels" in inputs else [])
        outputs[directory] = model.serve(*args).numpy().tolist()
        try:
            model.serve(tf.zeros([2, inputs["z"].shape[1] + 1]), *args[1:])
        except TypeError as err:
            outputs[directory + ".refused"] = str(err).splitlines()[0]
    print("JSON " + json.dumps(outputs))
""")


def reload_and_serve(requests):
    """Loads each SavedModel in one fresh Python process and serves its inputs.

    Args:
      requests: `{directory: (z, labels or None)}`.

    Returns:
      `{directory: served samples}`, and `{directory + ".refused": the first line of the
      TypeError}` of serving a latent one wider than `z`.
    """
    for directory, (z, labels) in requests.items():
        np.savez(directory + ".inputs.npz", z=z, **({} if labels is None else {"labels": labels}))
    result = subprocess.run(
        [sys.executable, "-c", RELOAD, *requests],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    line = [text for text in result.stdout.splitlines() if text.startswith("JSON ")][-1]
    return {key: value if key.endswith(".refused") else np.array(value) for key, value in json.loads(line[5:]).items()}


class ExportTest(tu.TestCase):
    def test_serve_z_and_serve_z_labels_in_a_fresh_process(self):
        rng = np.random.default_rng(0)
        conditional, _ = tu.tiny_conditional_pair(num_classes=3)
        plain = tu.tiny_generator()
        conditional_dir = os.path.join(self.get_temp_dir(), "conditional")
        plain_dir = os.path.join(self.get_temp_dir(), "plain")
        export.export_generator(conditional, conditional_dir, tu.LATENT, num_classes=3, info={"weights": "ema"})
        export.export_generator(plain, plain_dir, tu.LATENT)
        z = rng.normal(size=(4, tu.LATENT)).astype("float32")
        labels = np.array([0, 2, 1, 2], "int32")
        served = reload_and_serve({conditional_dir: (z, labels), plain_dir: (z, None)})
        self.assertAllClose(served[conditional_dir], conditional([z, labels], training=False), atol=1e-6)
        self.assertAllClose(served[plain_dir], plain(z, training=False), atol=1e-6)
        for directory in (conditional_dir, plain_dir):  # a latent of the wrong size: one line naming the shape
            self.assertRegex(
                served[directory + ".refused"], rf"shape=\(2, {tu.LATENT + 1}\).*shape=\(None, {tu.LATENT}\)"
            )
        info = export.read_export_info(conditional_dir)
        self.assertEqual((info["signature"], info["num_classes"], info["weights"]), ("serve(z, labels)", 3, "ema"))
        self.assertEqual(export.read_export_info(plain_dir)["signature"], "serve(z)")
        loaded = tf.saved_model.load(plain_dir)
        self.assertIn("serving_default", loaded.signatures)
