"""Evaluators: a generator's score on fixed latents, as `Evaluation` callbacks call it.

An evaluator is called with G (a Keras model, or any `generator(z, training=False)`) and
returns a dict of numbers; `primary` names the one reported as the run's final metric and
`describe(values)` is the line printed at the end of a run. Which evaluator a dataset gets
is decided by its `datasets.DatasetSpec`.
"""

import numpy as np

from tf_fusedprop.experiment import metrics

__all__ = ["EVALUATION", "GRID", "ImageEvaluator", "MixtureEvaluator", "class_labels", "generate", "latents"]

#: The purposes of a run's fixed latents (`latents`): the sample grid and the evaluation.
GRID, EVALUATION = 1, 2


def latents(seed, purpose, n, latent_dim):
    """Fixed latents for one purpose (`GRID`, `EVALUATION`) of a run, independent of training."""
    return np.random.default_rng([seed, purpose]).standard_normal((n, latent_dim)).astype(np.float32)


def generate(generator, latents, labels=None, batch_size=500):
    """G's samples of `latents` (and class `labels`, for a conditional G; inference mode), as
    one float32 numpy array."""
    batches = []
    for i in range(0, len(latents), batch_size):
        inputs = latents[i : i + batch_size]
        if labels is not None:
            inputs = [inputs, labels[i : i + batch_size]]
        batches.append(np.asarray(generator(inputs, training=False), dtype=np.float32))
    return np.concatenate(batches)


def class_labels(n, num_classes):
    """`n` class labels cycling through all classes (balanced), int32, for fixed conditional inputs."""
    return (np.arange(n) % num_classes).astype(np.int32)


class ImageEvaluator:
    """FID (and IS, or the classifier score; KID given the real features) of generated images
    under a feature extractor.

    A generator whose images are not all finite (a diverged run) scores NaN on every metric.

    For a conditional G, `labels` are the classes generated with the latents; when the
    extractor is a classifier of those classes (`class_accuracy=True`, e.g. the digits
    classifier) the share of samples it classifies as their requested class is reported as
    `class_accuracy`.

    Args:
      extractor: an object with `features(images)` and `logits(images)` (`features` module).
      reference: `(mu, sigma)` of the real images' features.
      latents: the fixed latents, `[n, latent_dim]`.
      label: the extractor's name in `describe`.
      score_name: the name of the score of its logits: "inception_score" under Inception,
        "classifier_score" under another classifier (the same formula, another network).
      labels: the fixed class labels `[n]` of a conditional G, or None.
      class_accuracy: report `class_accuracy` (needs `labels`).
      real_features: the real images' features `[m, d]`, for KID (`metrics.kernel_inception_distance`:
        `kid_subsets` subsets of `kid_subset_size` rows); None: no KID.
    """

    primary = "fid"

    def __init__(
        self,
        extractor,
        reference,
        latents,
        label,
        real_features=None,
        kid_subsets=10,
        kid_subset_size=1000,
        labels=None,
        class_accuracy=False,
        score_name="inception_score",
    ):
        self.extractor, self.reference, self.latents, self.label = extractor, reference, latents, label
        self.score_name = score_name
        self.real_features = real_features
        self.kid_subsets, self.kid_subset_size = kid_subsets, kid_subset_size
        self.labels, self.class_accuracy = labels, class_accuracy and labels is not None

    def __call__(self, generator):
        images = generate(generator, self.latents, self.labels)
        names = (
            ("fid", self.score_name)
            + (() if self.real_features is None else ("kid",))
            + (("class_accuracy",) if self.class_accuracy else ())
        )
        if not np.isfinite(images).all():
            return dict.fromkeys(names, float("nan"))
        acts = self.extractor.features(images)
        logits = self.extractor.logits(images)
        values = {
            "fid": metrics.frechet_distance(*metrics.activation_statistics(acts), *self.reference),
            self.score_name: metrics.inception_score(logits, splits=min(10, len(logits)))[0],
        }
        if self.real_features is not None:
            values["kid"] = metrics.kernel_inception_distance(
                acts, self.real_features, num_subsets=self.kid_subsets, subset_size=self.kid_subset_size
            )[0]
        if self.class_accuracy:
            values["class_accuracy"] = float(np.mean(np.argmax(logits, axis=1) == self.labels))
        return values

    def describe(self, values):
        # The raw MMD^2, as the epoch line's `kid` (papers often print KID x 1e3); its size
        # depends on the feature space, and early in a run it can be in the tens.
        kid = f", KID: {values['kid']:.4g} (raw MMD^2, as kid in the epoch lines)" if "kid" in values else ""
        accuracy = f", class accuracy: {100 * values['class_accuracy']:.1f}%" if "class_accuracy" in values else ""
        return (
            f"FID ({self.label}, {len(self.latents)} samples): {values['fid']:.2f}{kid}, "
            f"{self.score_name.replace('_', ' ')}: {values[self.score_name]:.2f}{accuracy}"
        )


class MixtureEvaluator:
    """Modes covered and high-quality fraction of samples of a 2-D Gaussian mixture.

    Args:
      centers, std: the mixture's ground truth (`data.mixture_spec`).
      latents: the fixed latents, `[n, latent_dim]`.
    """

    primary = "modes_covered"

    def __init__(self, centers, std, latents):
        self.centers, self.std, self.latents = centers, std, latents

    def __call__(self, generator):
        coverage = metrics.mode_coverage(generate(generator, self.latents), self.centers, self.std)
        return {"modes_covered": coverage["modes_covered"], "high_quality": coverage["high_quality_fraction"]}

    def describe(self, values):
        return (
            f"modes covered: {values['modes_covered']}/{len(self.centers)}, "
            f"high-quality samples: {100 * values['high_quality']:.0f}% of {len(self.latents)}"
        )
