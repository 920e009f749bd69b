"""datasets: the spec of every dataset name, looked up by name, and the networks' inputs."""

import contextlib
import io
import os
import shutil
from unittest import mock

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds
from absl.testing import parameterized

from tests import testing_utils as tu
from tf_fusedprop.experiment import datasets, evaluators, image_files, real_samples
from tf_fusedprop.experiment.config import validate

# Dataset name -> a shipped config of it.
CONFIGS = {
    "digits": "digits",
    "mnist5k": "mnist",
    "mnist1k": "mnist1k64",
    "cifar10": "cifar10_cnn_ns",
    "images": "images",
    "ring8": "ring8",
    "grid25": "grid25",
}


class RegistryTest(tu.TestCase):
    def test_names_are_the_pipelines_and_each_spec_knows_its_name(self):
        self.assertEqual(datasets.names(), ("cifar10", "digits", "grid25", "images", "mnist1k", "mnist5k", "ring8"))
        self.assertEqual(set(CONFIGS), set(datasets.names()))
        for name in datasets.names():
            self.assertEqual(datasets.get(name).name, name)

    def test_unknown_name_lists_valid_names(self):
        with self.assertRaisesRegex(
            ValueError,
            r"Received: name='mnist'. Valid names: cifar10, digits, grid25, images, mnist1k, mnist5k, ring8\.",
        ):
            datasets.get("mnist")
        with self.assertRaisesRegex(ValueError, "Received: name=None"):
            datasets.get(None)


class SpecTest(tu.TestCase):
    @parameterized.parameters(
        ("digits", (8, 16, 16, 1)),
        ("mnist5k", (8, 32, 32, 1)),
        ("cifar10", (8, 32, 32, 3)),
        ("ring8", (8, 2)),
        ("grid25", (8, 2)),
    )
    def test_pipeline_batches_have_the_sample_shape(self, name, shape):
        config = tu.tiny_config(CONFIGS[name])
        data = datasets.open_dataset(config)
        self.assertEqual((config.batch_size,) + data.sample_shape, shape)
        with tfds.testing.mock_data(num_examples=16):
            batch = next(iter(data.pipeline(0)))
        self.assertEqual(batch.shape, shape)
        self.assertEqual(batch.dtype, tf.float32)

    @parameterized.parameters(("digits", (4, 16, 16, 1), 1), ("cifar10", (4, 32, 32, 3), 3), ("ring8", (4, 2), 3))
    def test_render_gives_an_image(self, name, samples_shape, channels):
        image = datasets.open_dataset(tu.tiny_config(CONFIGS[name])).render(np.zeros(samples_shape, np.float32))
        self.assertEqual(image.dtype, np.uint8)
        self.assertEqual((image.ndim, image.shape[-1]), (3, channels))

    def test_image_datasets_take_image_networks(self):
        self.assertEqual(
            {name: datasets.get(name).image for name in datasets.names()},
            {
                "cifar10": True,
                "digits": True,
                "grid25": False,
                "images": True,
                "mnist1k": True,
                "mnist5k": True,
                "ring8": False,
            },
        )

    def test_cifar10_offline_trains_without_fid_and_says_so_in_one_line(self):
        config = tu.tiny_config("cifar10_cnn_ns")
        self.assertEqual(config.inception_path, "auto")  # fetched by default; the suite's fetch fails (conftest)
        evaluator, message = datasets.open_dataset(config).evaluation()("unused")
        self.assertIsNone(evaluator)
        self.assertRegex(
            message,
            r"^FID/KID/IS off: TF-GAN's Inception module could not be fetched \(.*no-inception.tar.gz.*\); training "
            r"goes on. To score CIFAR-10, run once where .* is reachable \(it is kept in .*\) or pass "
            r"--config.inception_path=DIR, a copy of the module's directory.$",
        )
        self.assertNotIn("\n", message)
        config.inception_path = None
        evaluator, message = datasets.open_dataset(config).evaluation()("unused")
        self.assertEqual(
            (evaluator, message),
            (None, "FID/KID/IS off (config.inception_path=None); --config.inception_path=auto scores CIFAR-10."),
        )

    def test_auto_fetches_the_module_once_then_scores_from_the_cache(self):
        module = os.path.join(self.get_temp_dir(), "standin")
        tf.saved_model.save(tu.InceptionModuleStandIn(), module)
        archive = shutil.make_archive(os.path.join(self.get_temp_dir(), "standin"), "gztar", module)
        with open(archive, "rb") as f:
            routes = {"/inception/1?tf-hub-format=compressed": f.read()}
        config = tu.tiny_config("images", cache_dir=os.path.join(self.get_temp_dir(), "cache"))
        config.data = tu.image_folder(os.path.join(self.get_temp_dir(), "images"), count=8)
        config.update(image_size=8, batch_size=4, eval_real_samples=4, eval_samples=4)
        with tu.http_server(routes) as (url, requests):
            with mock.patch.dict(os.environ, {"TF_FUSEDPROP_INCEPTION_URL": f"{url}/inception/1"}):
                evaluator, message = datasets.open_dataset(config).evaluation()(self.get_temp_dir())
                self.assertIsInstance(evaluator, evaluators.ImageEvaluator)
                self.assertIsNone(message)
                self.assertEqual(requests, ["/inception/1?tf-hub-format=compressed"])
        with mock.patch.dict(os.environ, {"TF_FUSEDPROP_INCEPTION_URL": f"{url}/inception/1"}):  # server gone
            evaluator, message = datasets.open_dataset(config).evaluation()(self.get_temp_dir())
        self.assertIsInstance(evaluator, evaluators.ImageEvaluator)
        self.assertLen(requests, 1)

    def test_cifar10_with_a_bad_inception_path_fails_when_prepared(self):
        config = tu.tiny_config("cifar10_cnn_ns")
        config.inception_path = tu.closed_port_url("/x")  # As offline.
        with self.assertRaisesRegex(ValueError, r"which could not be downloaded: .*\(config.inception_path\)$"):
            datasets.open_dataset(config).evaluation()

    def test_your_images_come_prepared_from_their_folder_and_without_inception_train_unscored(self):
        folder = os.path.join(self.get_temp_dir(), "images")
        for i in range(4):
            os.makedirs(os.path.join(folder, "sub"), exist_ok=True)
            image = np.full((12, 10, 3), 60 * i, np.uint8)
            tf.io.write_file(os.path.join(folder, "sub", f"{i}.png"), tf.io.encode_png(image))
        config = tu.tiny_config("images", cache_dir=os.path.join(self.get_temp_dir(), "cache"))
        config.data, config.image_size, config.batch_size = folder, 8, 4
        data = datasets.open_dataset(config)
        self.assertEqual(data.sample_shape, (8, 8, 3))
        batch = next(iter(data.pipeline(0))).numpy()
        self.assertEqual(batch.shape, (4, 8, 8, 3))
        self.assertAllClose(np.sort(batch[:, 0, 0, 0]), [60 * i / 127.5 - 1 for i in range(4)], atol=1e-6)
        evaluator, message = data.evaluation()("unused")
        self.assertIsNone(evaluator)
        self.assertRegex(message, r"^FID/KID/IS off: .* To score your images, run once where .*\.$")

    def test_held_out_images_are_never_in_a_training_batch(self):
        folder = os.path.join(self.get_temp_dir(), "images")
        os.makedirs(folder, exist_ok=True)
        for i in range(10):  # each image one gray level: which one a batch holds is readable
            tf.io.write_file(os.path.join(folder, f"{i}.png"), tf.io.encode_png(np.full((8, 8, 1), 20 * i, np.uint8)))
        config = tu.tiny_config("images", cache_dir=os.path.join(self.get_temp_dir(), "cache"))
        config.update(data=folder, image_size=8, channels=1, batch_size=4, augment="translation")
        config.adaptive_augment.update(target=0.6, held_out=3)
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            data = datasets.open_dataset(config)
            held_out = data.held_out(3)
        self.assertIn("3 of them held out from training", printed.getvalue())
        levels = lambda images: set(np.round((np.asarray(images)[:, 0, 0, 0] + 1) * 127.5).astype(int))  # noqa: E731
        held = levels(held_out)
        self.assertLen(held, 3)
        trained = set()
        for batch in data.pipeline(0).take(10):  # 40 samples: every pass over the 7 left
            trained |= levels(batch)
        self.assertEqual(trained, {20 * i for i in range(10)} - held)
        config.adaptive_augment.held_out = 7  # 3 left: fewer than a batch of 4
        with self.assertRaisesRegex(image_files.ImageSourceError, r"7 of them held out .* fewer than one batch"):
            with contextlib.redirect_stdout(io.StringIO()):
                datasets.open_dataset(config).contents  # noqa: B018

    def test_a_digit_set_holds_back_a_fixed_draw_of_its_own_that_training_skips(self):
        config = tu.tiny_config("digits")
        config.update(batch_size=64, augment="translation")
        unaugmented = [b.numpy() for b in datasets.open_dataset(config).pipeline(3).take(2)]
        expected = [b.numpy() for b in real_samples.digits(64, image_size=16, seed=3).take(2)]
        self.assertAllEqual(unaugmented, expected)  # holding none back: the pipeline as it always was
        config.adaptive_augment.update(target=0.6, held_out=40)
        data = datasets.open_dataset(config)
        everything = real_samples.digits_array(16)
        rows = datasets.held_out_rows(len(everything), 40)
        self.assertAllEqual(data.held_out(40), everything[rows])
        self.assertAllEqual(rows, datasets.held_out_rows(len(everything), 40))  # the same draw every time
        key = lambda images: {image.tobytes() for image in np.asarray(images)}  # noqa: E731
        trained = set()
        for batch in data.pipeline(3).take(1757 // 64 + 1):  # a pass over the 1,757 left, and more
            trained |= key(batch)
        self.assertEqual(trained, key(np.delete(everything, rows, axis=0)))

    @parameterized.parameters((32, (512, 64)), (64, (512, 64)), (128, (256, 32)), (256, (128, 16)))
    def test_widths_left_unset_follow_the_image_size(self, size, widths):
        config = tu.CONFIG_MODULES["images"].get_config()
        folder = tu.image_folder(os.path.join(self.get_temp_dir(), "images"), count=8)
        config.update(data=folder, image_size=size, batch_size=8, cache_dir=self.get_temp_dir())
        completed = datasets.completed(config)
        self.assertEqual((completed.generator.width, completed.discriminator.width), widths)
        self.assertIsNone(config.generator.width)  # the caller's config is left alone
        config.generator.width = 128  # set by the user: kept
        kept = datasets.completed(config)
        self.assertEqual((kept.generator.width, kept.discriminator.width), (128, widths[1]))
        self.assertIs(datasets.completed(completed), completed)  # nothing left to fill

    def test_mnist5k_is_scored_under_a_classifier_trained_on_it(self):
        config = tu.tiny_config("mnist")
        config.image_size = 16  # a classifier at 16 px trains in seconds
        cache_dir = self.get_temp_dir()
        evaluator, message = datasets.open_dataset(config).evaluation()(cache_dir)
        self.assertRegex(message, r"^MNIST-5k classifier: 9\d\.\d% held-out accuracy \(trained now in ")
        self.assertEqual((evaluator.extractor.source, evaluator.label), ("mnist5k", "MNIST-5k classifier"))
        self.assertEqual(evaluator.real_features.shape, (5000, 128))
        self.assertEqual(
            sorted(os.listdir(cache_dir)),
            ["mnist5k_16px_classifier_v1_stats.npz", "mnist5k_classifier_16px_seed0_v1.keras"],
        )
        self.assertEqual(datasets.get("mnist5k").eval_samples, 5000)
        # mnist1k trains on 1,000 of those digits and is scored against all 5,000, by the same classifier.
        config.dataset = "mnist1k"
        small = datasets.open_dataset(config)
        evaluator, _ = small.evaluation()(cache_dir)
        self.assertEqual((evaluator.extractor.source, evaluator.real_features.shape), ("mnist5k", (5000, 128)))
        self.assertEqual(len(os.listdir(cache_dir)), 2)  # nothing trained or computed again

    @parameterized.parameters(("ring8", 8), ("grid25", 25))
    def test_mixtures_are_scored_by_mode_coverage(self, name, modes):
        evaluator, message = datasets.open_dataset(tu.tiny_config(name)).evaluation()("unused")
        self.assertIsNone(message)
        self.assertIsInstance(evaluator, evaluators.MixtureEvaluator)
        self.assertLen(evaluator.centers, modes)
        self.assertEqual(evaluator.latents.shape, (20, 8))


class OpenedOnceTest(tu.TestCase):
    """One run's dataset is read once, and what validation read is what the run uses."""

    def _config(self, **fields):
        config = tu.tiny_config("images", cache_dir=os.path.join(self.get_temp_dir(), "cache"))
        config.data = tu.image_folder(os.path.join(self.get_temp_dir(), "images"), count=8)
        config.update({"image_size": 8, "batch_size": 4, **fields})
        config.generator.width = config.discriminator.width = None  # from the data's image size
        return config

    def test_validation_reads_the_images_once_and_the_run_shares_them(self):
        config = self._config()
        with mock.patch.object(image_files, "decode_once", wraps=image_files.decode_once) as decode:
            data = validate(config)
            self.assertEqual(decode.call_count, 1)  # the builder arguments' check needed the sample shape
            completed = datasets.completed(config, data)
            self.assertIsNot(completed, config)  # widths filled in
            again = validate(completed, data)
            self.assertEqual((again.sample_shape, again.network_inputs[1]["input_shape"]), ((8, 8, 1), (8, 8, 1)))
            next(iter(again.pipeline(0)))
            again.evaluation()(self.get_temp_dir())
            self.assertEqual(decode.call_count, 1)
            self.assertIs(again.contents, data.contents)
            other = self._config(image_size=16)  # other data: read for itself
            self.assertEqual(validate(other, data).sample_shape, (16, 16, 1))
            self.assertEqual(decode.call_count, 2)

    def test_nothing_is_read_until_used(self):
        with mock.patch.object(real_samples, "cifar10_decoded", side_effect=AssertionError("read")):
            data = datasets.open_dataset(tu.tiny_config("cifar10_cnn_ns"))
            self.assertEqual(data.sample_shape, (32, 32, 3))
            self.assertLen(data.class_names, 10)
            with self.assertRaisesRegex(AssertionError, "read"):
                data.pipeline(0)


class NetworkInputsTest(tu.TestCase):
    @parameterized.parameters(
        ("digits", ({"image_size": 16, "channels": 1}, {"image_size": 16, "channels": 1})),
        ("ring8", ({"output_dim": 2}, {"input_dim": 2})),
        ("mnist", ({"channels": 1, "bottom": 4, "image_size": 32}, {"input_shape": (32, 32, 1), "bottom": 4})),
        ("cifar10_cnn_ns", ({"channels": 3, "bottom": 4, "image_size": 32}, {"input_shape": (32, 32, 3), "bottom": 4})),
        (
            "cifar10_resnet_ns",
            ({"channels": 3, "bottom": 4, "image_size": 32}, {"input_shape": (32, 32, 3), "bottom": 4}),
        ),
    )
    def test_the_data_fix_the_builders_shape_arguments(self, name, expected):
        self.assertEqual(datasets.open_dataset(tu.tiny_config(name)).network_inputs, expected)


if __name__ == "__main__":
    tf.test.main()
