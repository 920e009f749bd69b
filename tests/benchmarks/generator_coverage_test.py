"""benchmarks/generator_coverage.py: an exported generator's coverage of the data and the digits it draws."""

import contextlib
import io
import json
import os
import sys

import keras
import numpy as np

from tests import testing_utils as tu
from tf_fusedprop import export
from tf_fusedprop.experiment import real_samples

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import generator_coverage  # noqa: E402


def one_digit_generator(image, latent_dim=8):
    """A G that draws `image` for every latent (a collapse to one mode)."""
    flat = image.reshape(-1)
    dense = keras.layers.Dense(
        flat.size, kernel_initializer="zeros", bias_initializer=keras.initializers.Constant(flat)
    )
    return keras.Sequential([keras.Input((latent_dim,)), dense, keras.layers.Reshape(image.shape)])


class GeneratorCoverageTest(tu.TestCase):
    def workdir(self, dataset="digits", batch_size=32):
        directory = self.get_temp_dir()
        config = {"dataset": dataset, "batch_size": batch_size, "seed": 0, "cache_dir": directory}
        if dataset != "ring8":  # a mixture run has no image size
            config["image_size"] = 16
        with open(os.path.join(directory, "config.json"), "w") as f:
            json.dump(config, f)
        return directory

    def test_a_generator_of_one_digit_covers_little_of_the_data_and_draws_one_digit(self):
        directory = self.workdir()
        image = real_samples.digits_array(16)[3]  # a "3"
        export.export_generator(one_digit_generator(image), os.path.join(directory, "generator"), 8, info={"step": 5})
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            generator_coverage.main([directory, "--num=200", "--batches=5"])
        itself, run = printed.getvalue().splitlines()
        self.assertRegex(
            itself, r"^digits against itself, batches of 32: coverage 0\.9\d\d \+- 0\.\d+; 10 digits over 2%"
        )
        self.assertRegex(run, r"at update 5: coverage 0\.\d{3} \+- 0\.\d+; 1 digits over 2% \(.*3:1\.00")
        # One image lies within the ball of the real rows near it: in batches of 32 digits a fifth or so.
        self.assertLess(float(run.split("coverage ")[1].split()[0]), 0.4)

    def test_a_mixture_generator_of_one_mode_reads_one_mode_and_each_k_asked(self):
        directory = self.workdir("ring8", batch_size=64)
        centers, _ = real_samples.mixture_spec("ring8")
        export.export_generator(
            one_digit_generator(centers[2]), os.path.join(directory, "generator"), 8, info={"step": 9}
        )
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            generator_coverage.main([directory, "--num=200", "--batches=5", "--neighbours=5,16"])
        itself, run = printed.getvalue().splitlines()
        self.assertRegex(
            itself,
            r"^ring8 against itself, batches of 64: coverage 0\.9\d\d \+- 0\.\d+ \(k=5\), (0\.9\d\d|1\.000) \+- 0\.\d+ "
            r"\(k=16\); 8 of 8 modes, 99% high-quality$",
        )
        # The mode's centre lies in the balls of that mode's real points alone: about an eighth.
        self.assertRegex(run, r"at update 9: coverage 0\.[01]\d\d \+- .* \(k=16\); 1 of 8 modes, 100% high-quality$")

    def test_coverage_of_the_data_by_itself_and_by_one_mode(self):
        real = real_samples.digits_array(16)
        mean, std = generator_coverage.mean_coverage(real[::2], real[1::2], 64, 20)
        self.assertAllClose(mean, 1 - 2.0**-5, atol=0.03)
        self.assertGreater(std, 0.0)
        self.assertLess(generator_coverage.mean_coverage(np.repeat(real[:1], 64, 0), real, 64, 5)[0], 0.1)

    def test_a_run_of_other_data_or_without_a_generator_is_refused_in_one_line(self):
        with self.assertRaisesRegex(
            SystemExit, r"trains on 'cifar10', not a labelled digit set \(digits, mnist1k, mnist5k\) or a 2-D mixture"
        ):
            generator_coverage.main([self.workdir("cifar10")])
        with self.assertRaisesRegex(SystemExit, r"--neighbours takes positive integers, comma-separated"):
            generator_coverage.main([self.workdir(), "--neighbours=5,x"])
        with self.assertRaisesRegex(SystemExit, r"exported no generator yet"):
            generator_coverage.main([self.workdir()])
        with self.assertRaisesRegex(SystemExit, r"holds no run \(no config.json\)"):
            generator_coverage.main([self.get_temp_dir() + "/nothing"])
