"""interrupt: SIGINT and SIGTERM become one `Interrupted`, held off while a checkpoint is written."""

import os
import signal
import time

from tests import testing_utils as tu
from tf_fusedprop.experiment import interrupt


def _send(signum):
    os.kill(os.getpid(), signum)
    time.sleep(0.05)  # Python runs the handler at its next bytecode; give the signal time to land


class SignalsTest(tu.TestCase):
    def test_a_signal_raises_at_once_with_its_number_and_exit_status(self):
        for signum, status, what in ((signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "stopped by SIGTERM")):
            with self.assertRaises(interrupt.Interrupted) as caught:
                with interrupt.Signals():
                    _send(signum)
            self.assertIsInstance(caught.exception, KeyboardInterrupt)
            self.assertEqual((caught.exception.signum, caught.exception.exit_status), (signum, status))
            self.assertEqual(caught.exception.what, what)

    def test_deferred_waits_for_the_block_and_a_second_signal_changes_nothing(self):
        finished = []
        with self.assertRaises(interrupt.Interrupted) as caught:
            with interrupt.Signals() as signals:
                with signals.deferred():
                    _send(signal.SIGTERM)
                    _send(signal.SIGINT)  # a second one while the checkpoint is written
                    finished.append("checkpoint")
        self.assertEqual((finished, caught.exception.signum), (["checkpoint"], signal.SIGTERM))

    def test_once_stopping_later_signals_are_ignored_and_handlers_come_back(self):
        previous = signal.getsignal(signal.SIGTERM)
        with interrupt.Signals() as signals:
            with self.assertRaises(interrupt.Interrupted):
                _send(signal.SIGINT)
            with signals.deferred():  # saving the checkpoint after the stop
                _send(signal.SIGINT)
            self.assertTrue(signals.stopping)
        self.assertIs(signal.getsignal(signal.SIGTERM), previous)

    def test_training_interrupted_says_where_it_stopped_and_what_is_kept(self):
        saved = {"epoch": 1, "steps": 70, "weights": "step_00000070.weights.h5", "epoch_steps": 20}
        at_epoch_end = {"epoch": 1, "steps": 50, "weights": "epoch_0001.weights.h5"}
        cases = [
            (
                70,
                saved,
                signal.SIGTERM,
                "stopped by SIGTERM at step 70, saved in B; rerun the same command to resume from it",
            ),
            (
                72,
                saved,
                signal.SIGINT,
                "interrupted at step 72; the last checkpoint (step 70, 20 steps into epoch 2) is kept in B; rerun the "
                "same command to resume from it",
            ),
            (
                60,
                at_epoch_end,
                signal.SIGINT,
                "interrupted at step 60; the last checkpoint (epoch 1, step 50) is kept in B; rerun the same command "
                "to resume from it",
            ),
            (
                3,
                None,
                signal.SIGTERM,
                "stopped by SIGTERM at step 3, before the first checkpoint: nothing is kept in W; rerun the same "
                "command to start again",
            ),
        ]
        for step, checkpoint, signum, line in cases:
            error = interrupt.TrainingInterrupted(step, checkpoint, "B", "W", signum=signum)
            self.assertEqual(error.describe(), line)
            self.assertEqual(error.exit_status, 128 + signum)
