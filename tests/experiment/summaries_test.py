"""summaries: records that TensorBoard's scalars, images and text plugins read."""

import numpy as np
import tensorflow as tf

from tests import testing_utils as tu
from tf_fusedprop.experiment import summaries


class SummariesTest(tu.TestCase):
    def test_records_use_tensorboard_plugin_formats(self):
        directory = self.get_temp_dir()
        writer = tf.summary.create_file_writer(directory)
        image = np.zeros((3, 5, 1), np.uint8)
        with writer.as_default():
            summaries.summary_scalar("loss", 1.5, step=7)
            summaries.summary_image("grid", image, step=7)
            summaries.summary_text("config", "hello", step=0)
        writer.close()
        events = tu.read_events(directory)
        ((step, plugin, value),) = events["loss"]
        self.assertEqual((step, plugin, float(value)), (7, "scalars", 1.5))
        ((step, plugin, value),) = events["grid"]
        self.assertEqual(plugin, "images")
        self.assertEqual((value[0], value[1]), (b"5", b"3"))  # Width, height, PNG.
        self.assertAllEqual(tf.io.decode_png(value[2]).numpy(), image)
        ((_, plugin, value),) = events["config"]
        self.assertEqual((plugin, value), ("text", b"hello"))


if __name__ == "__main__":
    tf.test.main()
