"""benchmarks/time_to_quality/events.py: a run's history from its TensorBoard scalars."""

import os

import tensorflow as tf

from benchmarks.time_to_quality.events import history_from_events
from tests import testing_utils as tu


class HistoryFromEventsTest(tu.TestCase):
    def test_metrics_per_evaluation_seconds_from_steps_per_second_finite_while_the_losses_were_written(self):
        workdir = self.get_temp_dir()
        self.assertEqual(history_from_events(workdir), [])  # no events: no history
        writer = tf.summary.create_file_writer(os.path.join(workdir, "logs"))
        scalars = {  # step: scalars; g_loss non-finite at 20 (not written), no evaluation at 30
            10: {"steps_per_second": 10.0, "d_loss": 0.5, "g_loss": 1.0, "fid": 5.0},
            20: {"steps_per_second": 5.0, "d_loss": 0.5, "fid": 4.0},
            30: {"steps_per_second": 5.0, "d_loss": 0.5, "g_loss": 1.0},
        }
        with writer.as_default():
            for step, values in scalars.items():
                for tag, value in values.items():
                    tf.summary.scalar(tag, value, step=step)
        writer.close()
        self.assertEqual(
            history_from_events(workdir),
            [
                {"epoch": None, "step": 10, "train_seconds": 1.0, "metrics": {"fid": 5.0}, "finite": True},
                {"epoch": None, "step": 20, "train_seconds": 3.0, "metrics": {"fid": 4.0}, "finite": False},
            ],
        )


if __name__ == "__main__":
    tf.test.main()
