"""evaluators: FID of an image generator, mode coverage of a mixture generator, fixed latents."""

import numpy as np
import tensorflow as tf

from tests import testing_utils as tu
from tf_fusedprop.experiment import evaluators, metrics, real_samples


class ImageEvaluatorTest(tu.TestCase):
    def test_matches_frechet_distance_of_the_features(self):
        rng = np.random.default_rng(0)
        real = rng.normal(size=(200, 3))

        class Extractor:
            def features(self, images):
                return np.asarray(images).reshape(len(images), -1)[:, :3]

            def logits(self, images):
                return np.zeros((len(images), 10))

        latents = rng.normal(size=(100, 3)).astype(np.float32)
        generator = lambda z, training: z + 1.0
        evaluator = evaluators.ImageEvaluator(Extractor(), metrics.activation_statistics(real), latents, "test")
        result = evaluator(generator)
        expected = metrics.frechet_distance(
            *metrics.activation_statistics(latents + 1.0), *metrics.activation_statistics(real)
        )
        self.assertAllClose(result["fid"], expected)
        self.assertAllClose(result["inception_score"], 1.0)
        self.assertEqual(evaluator.primary, "fid")
        self.assertEqual(
            evaluator.describe({"fid": 12.345, "inception_score": 2.0}),
            "FID (test, 100 samples): 12.35, inception score: 2.00",
        )
        # Under another classifier the same score is named for what it is.
        named = evaluators.ImageEvaluator(
            Extractor(), metrics.activation_statistics(real), latents, "digits", score_name="classifier_score"
        )
        self.assertEqual(set(named(generator)), {"fid", "classifier_score"})
        self.assertEqual(
            named.describe({"fid": 1.0, "classifier_score": 9.5}),
            "FID (digits, 100 samples): 1.00, classifier score: 9.50",
        )

    def test_kid_with_the_real_features_and_nan_for_a_diverged_generator(self):
        rng = np.random.default_rng(0)
        real = rng.normal(size=(50, 3))

        class Extractor:
            def features(self, images):
                return np.asarray(images)

            def logits(self, images):
                return np.zeros((len(images), 10))

        latents = rng.normal(size=(40, 3)).astype(np.float32)
        evaluator = evaluators.ImageEvaluator(
            Extractor(),
            metrics.activation_statistics(real),
            latents,
            "test",
            real_features=real,
            kid_subsets=3,
            kid_subset_size=20,
        )
        result = evaluator(lambda z, training: z)
        kid = metrics.kernel_inception_distance(latents, real, num_subsets=3, subset_size=20)[0]
        self.assertEqual(set(result), {"fid", "inception_score", "kid"})
        self.assertAllClose(result["kid"], kid)
        self.assertIn(
            f"KID: {kid:.4g} (raw MMD^2, as kid in the epoch lines), inception score", evaluator.describe(result)
        )
        diverged = evaluator(lambda z, training: z * np.float32("nan"))
        self.assertEqual(set(diverged), {"fid", "inception_score", "kid"})
        self.assertTrue(np.isnan(list(diverged.values())).all())


class ConditionalEvaluatorTest(tu.TestCase):
    def test_labels_reach_the_generator_and_class_accuracy_is_measured(self):
        class Classifier:  # "classifies" an image as the class written in its first pixel
            def features(self, images):
                return np.asarray(images).reshape(len(images), -1)

            def logits(self, images):
                return np.eye(3)[np.asarray(images)[:, 0].astype(int)]

        labels = evaluators.class_labels(30, 3)
        self.assertAllEqual(np.bincount(labels), [10, 10, 10])
        # the generator writes the requested class, except for class 2 which it draws as 0
        generator = lambda inputs, training: np.stack([np.where(inputs[1] == 2, 0, inputs[1]), inputs[0][:, 0]], 1)
        latents = np.random.default_rng(0).normal(size=(30, 2)).astype(np.float32)
        evaluator = evaluators.ImageEvaluator(
            Classifier(), (np.zeros(2), np.eye(2)), latents, "toy", labels=labels, class_accuracy=True
        )
        values = evaluator(generator)
        self.assertAllClose(values["class_accuracy"], 2 / 3)
        self.assertIn("class accuracy: 66.7%", evaluator.describe(values))
        no_accuracy = evaluators.ImageEvaluator(Classifier(), (np.zeros(2), np.eye(2)), latents, "toy", labels=labels)
        self.assertNotIn("class_accuracy", no_accuracy(generator))


class MixtureEvaluatorTest(tu.TestCase):
    def test_exact_and_collapsed_generators(self):
        centers, std = real_samples.mixture_spec("ring8")
        latents = np.arange(80, dtype=np.float32)[:, None]
        exact = lambda z, training: centers[np.asarray(z[:, 0], int) % 8]
        collapsed = lambda z, training: np.repeat(centers[:1] + 10 * std, len(z), axis=0)
        evaluator = evaluators.MixtureEvaluator(centers, std, latents)
        self.assertEqual(evaluator(exact), {"modes_covered": 8, "high_quality": 1.0})
        self.assertEqual(evaluator(collapsed), {"modes_covered": 0, "high_quality": 0.0})
        self.assertEqual(evaluator.primary, "modes_covered")
        self.assertEqual(
            evaluator.describe({"modes_covered": 7, "high_quality": 0.925}),
            "modes covered: 7/8, high-quality samples: 92% of 80",
        )


class LatentsAndGenerateTest(tu.TestCase):
    def test_latents_are_fixed_per_seed_and_purpose(self):
        grid = evaluators.latents(3, evaluators.GRID, 5, 4)
        self.assertEqual((grid.shape, grid.dtype), ((5, 4), np.float32))
        self.assertAllEqual(grid, evaluators.latents(3, evaluators.GRID, 5, 4))
        self.assertNotAllEqual(grid, evaluators.latents(3, evaluators.EVALUATION, 5, 4))
        self.assertNotAllEqual(grid, evaluators.latents(4, evaluators.GRID, 5, 4))

    def test_generate_batches_in_inference_mode(self):
        calls = []

        def generator(z, training):
            calls.append((len(z), training))
            return 2 * z

        latents = np.arange(7, dtype=np.float32)[:, None]
        samples = evaluators.generate(generator, latents, batch_size=3)
        self.assertEqual(calls, [(3, False), (3, False), (1, False)])
        self.assertEqual(samples.dtype, np.float32)
        self.assertAllEqual(samples, 2 * latents)


if __name__ == "__main__":
    tf.test.main()
