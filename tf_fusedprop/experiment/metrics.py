"""Sample-quality metrics for GANs: FID, IS, KID and mode coverage, with numpy and scipy only.

The metrics are plain functions of activations (float64 inside), so they are cheap to test
and independent of the network that produced the activations (`features` holds the
extractors); this module imports neither TensorFlow nor Keras:

* `frechet_distance`, `activation_statistics`, `frechet_distance_from_activations`: the
  Frechet Inception Distance (FID; Heusel et al. 2017, "GANs Trained by a Two Time-Scale Update
  Rule Converge to a Local Nash Equilibrium"), computed like the TTUR reference code.
* `inception_score`: the Inception Score (IS; Salimans et al. 2016, "Improved Techniques for
  Training GANs"), from classifier logits.
* `kernel_inception_distance`: the Kernel Inception Distance (KID; Binkowski et al. 2018,
  "Demystifying MMD GANs"), an unbiased MMD^2 with a cubic polynomial kernel.
* `mode_coverage`: modes captured and fraction of high-quality samples for the 2-D Gaussian
  mixtures of Metz et al. 2017 (`tf_fusedprop.experiment.real_samples.mixture_spec` gives their ground
  truth).
"""

import warnings

import numpy as np
import scipy.linalg
import scipy.special

__all__ = [
    "activation_statistics",
    "frechet_distance",
    "frechet_distance_from_activations",
    "inception_score",
    "kernel_inception_distance",
    "mode_coverage",
]


# --------------------------------------------------------------------------------------------
# Frechet distance (FID)
# --------------------------------------------------------------------------------------------


def activation_statistics(acts):
    """Mean and covariance of activations, the Gaussian that FID fits to a set of samples.

    Args:
      acts: array of shape `[n, d]` with `n >= 2` (one row of activations per sample).

    Returns:
      `(mu, sigma)`: float64 arrays of shapes `[d]` and `[d, d]`; `sigma` is the unbiased
      sample covariance (`np.cov`, divisor `n - 1`), as in the TTUR reference code.
    """
    acts = np.asarray(acts, dtype=np.float64)
    if acts.ndim != 2 or acts.shape[0] < 2:
        raise ValueError(f"acts must have shape [n, d] with n >= 2. Received: shape {acts.shape}")
    return acts.mean(axis=0), np.cov(acts, rowvar=False)


def frechet_distance(mu1, sigma1, mu2, sigma2, eps=1e-6):
    """Frechet distance between the Gaussians `N(mu1, sigma1)` and `N(mu2, sigma2)`.

        d^2 = ||mu1 - mu2||^2 + Tr(sigma1 + sigma2 - 2 (sigma1 sigma2)^(1/2))

    (Dowson & Landau 1982; as FID: Heusel et al. 2017). Computed like the TTUR reference code
    (`fid.py`): `scipy.linalg.sqrtm` of the product; if that is not finite (a numerically
    singular product), `eps * I` is added to both covariances and the square root retried;
    the real part of the square root is used. Singular covariances (e.g. fewer samples than
    dimensions, or features that are always 0) are fine: their warning is silenced.

    Args:
      mu1, mu2: mean vectors of shape `[d]`.
      sigma1, sigma2: covariance matrices of shape `[d, d]`.
      eps: diagonal offset used only when the first square root is not finite.

    Returns:
      The squared Frechet distance, a Python float (>= 0 up to rounding).

    Raises:
      ValueError: mismatched shapes, or a square root whose imaginary part is not negligible
        (more than 1e-3 relative to the trace; the covariances are then not valid).
    """
    mu1, mu2 = np.atleast_1d(np.asarray(mu1, np.float64)), np.atleast_1d(np.asarray(mu2, np.float64))
    sigma1, sigma2 = np.atleast_2d(np.asarray(sigma1, np.float64)), np.atleast_2d(np.asarray(sigma2, np.float64))
    d = mu1.shape[0]
    if mu1.shape != (d,) or mu2.shape != (d,) or sigma1.shape != (d, d) or sigma2.shape != (d, d):
        raise ValueError(
            "Expected mu1, mu2 of shape [d] and sigma1, sigma2 of shape [d, d]. Received: shapes "
            f"mu1 {mu1.shape}, sigma1 {sigma1.shape}, mu2 {mu2.shape}, sigma2 {sigma2.shape}"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
        covmean = scipy.linalg.sqrtm(sigma1 @ sigma2)
        if not np.isfinite(covmean).all():
            offset = eps * np.eye(d)
            covmean = scipy.linalg.sqrtm((sigma1 + offset) @ (sigma2 + offset))
    if np.iscomplexobj(covmean):
        scale = max(1.0, abs(np.trace(covmean.real)))
        if np.max(np.abs(np.diagonal(covmean).imag)) > 1e-3 * scale:
            raise ValueError(
                "The square root of sigma1 @ sigma2 has a large imaginary part "
                f"({np.max(np.abs(np.diagonal(covmean).imag)):.3g}); are sigma1 and sigma2 covariances?"
            )
        covmean = covmean.real
    diff = mu1 - mu2
    return float(diff @ diff + np.trace(sigma1) + np.trace(sigma2) - 2.0 * np.trace(covmean))


def frechet_distance_from_activations(a, b):
    """FID between two sets of activations: `frechet_distance` of their `activation_statistics`.

    Args:
      a, b: arrays of shapes `[n_a, d]` and `[n_b, d]`.

    Returns:
      The Frechet distance, a Python float. It is biased upwards for small `n` (Binkowski et
      al. 2018): compare only scores computed from the same numbers of samples.
    """
    return frechet_distance(*activation_statistics(a), *activation_statistics(b))


# --------------------------------------------------------------------------------------------
# Inception score (IS)
# --------------------------------------------------------------------------------------------


def inception_score(logits, splits=10):
    """Inception Score from classifier logits (Salimans et al. 2016).

        IS = exp(E_x KL(p(y|x) || p(y))),   p(y|x) = softmax(logits(x)),  p(y) = E_x p(y|x)

    computed, as in the reference code, on each of `splits` consecutive parts of the samples
    (`np.array_split`) with `p(y)` the mean over that part. It ranges from 1 (every sample gives
    the same prediction) to `K` (confident predictions spread evenly over all K classes).

    Args:
      logits: array of shape `[n, K]` of unnormalized log-probabilities.
      splits: positive int <= n, the number of parts.

    Returns:
      `(mean, std)` of the per-part scores, Python floats.
    """
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 2 or logits.shape[0] == 0:
        raise ValueError(f"logits must have shape [n, num_classes] with n >= 1. Received: shape {logits.shape}")
    if not 1 <= splits <= logits.shape[0]:
        raise ValueError(f"splits must be in [1, n={logits.shape[0]}]. Received: splits={splits!r}")
    scores = []
    for part in np.array_split(logits, splits):
        log_p = scipy.special.log_softmax(part, axis=1)
        log_py = np.log(np.exp(log_p).mean(axis=0))
        kl = np.sum(np.exp(log_p) * (log_p - log_py), axis=1)
        scores.append(np.exp(kl.mean()))
    return float(np.mean(scores)), float(np.std(scores))


# --------------------------------------------------------------------------------------------
# Kernel inception distance (KID)
# --------------------------------------------------------------------------------------------


def _polynomial_kernel(x, y):
    """The KID kernel `k(x, y) = (x . y / d + 1)^3` for all pairs of rows."""
    return (x @ y.T / x.shape[1] + 1.0) ** 3


def _mmd2_unbiased(x, y):
    """Unbiased MMD^2 (Gretton et al. 2012, eq. 3): off-diagonal means of k_xx and k_yy minus
    twice the mean of k_xy."""
    m, n = len(x), len(y)
    k_xx, k_yy, k_xy = _polynomial_kernel(x, x), _polynomial_kernel(y, y), _polynomial_kernel(x, y)
    xx = (k_xx.sum() - np.trace(k_xx)) / (m * (m - 1))
    yy = (k_yy.sum() - np.trace(k_yy)) / (n * (n - 1))
    return xx + yy - 2.0 * k_xy.mean()


def kernel_inception_distance(a, b, num_subsets=100, subset_size=1000, seed=0):
    """Kernel Inception Distance (Binkowski et al. 2018, "Demystifying MMD GANs").

    The unbiased estimate of MMD^2 between the distributions of `a` and `b` with the cubic
    polynomial kernel `k(x, y) = (x . y / d + 1)^3`, averaged over `num_subsets` random subsets
    of `subset_size` rows drawn without replacement from each set (the authors' code). Unlike
    FID it is unbiased: it is ~0 (and may be slightly negative) for equal distributions.

    Args:
      a, b: arrays of shapes `[n_a, d]` and `[n_b, d]`.
      num_subsets: positive int, the number of subsets.
      subset_size: rows per subset; capped at `min(n_a, n_b)` (must end up >= 2).
      seed: seed of the subset draws; equal seeds give equal results.

    Returns:
      `(mean, std)` of the per-subset MMD^2 estimates, Python floats.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"a and b must have shapes [n_a, d] and [n_b, d]. Received: {a.shape} and {b.shape}")
    size = min(subset_size, len(a), len(b))
    if size < 2 or num_subsets < 1:
        raise ValueError(
            "Need num_subsets >= 1 and at least 2 rows per subset. Received: "
            f"num_subsets={num_subsets}, subset_size={subset_size}, n_a={len(a)}, n_b={len(b)}"
        )
    rng = np.random.default_rng(seed)
    estimates = [
        _mmd2_unbiased(a[rng.choice(len(a), size, replace=False)], b[rng.choice(len(b), size, replace=False)])
        for _ in range(num_subsets)
    ]
    return float(np.mean(estimates)), float(np.std(estimates))


# --------------------------------------------------------------------------------------------
# Mode coverage for the 2-D mixtures
# --------------------------------------------------------------------------------------------


def mode_coverage(samples, centers, std, threshold=3.0, min_samples=1):
    """Modes captured and fraction of high-quality samples for a Gaussian mixture.

    The convention used to score the 2-D ring and grid of Metz et al. 2017 ("Unrolled
    Generative Adversarial Networks") by VEEGAN (Srivastava et al. 2017) and later papers
    (PacGAN, Lin et al. 2018): each sample is assigned to its nearest center; it is
    *high quality* if its Euclidean distance to that center is at most `threshold * std`
    (3 standard deviations); a mode is *captured* if at least `min_samples` high-quality
    samples are assigned to it. (In 2-D, 98.9% of a mode's own samples lie within 3 std.)

    Args:
      samples: array of shape `[n, dim]` of generated samples.
      centers: array of shape `[num_modes, dim]` (e.g. from `real_samples.mixture_spec`).
      std: positive float, the per-axis standard deviation of each mode.
      threshold: the high-quality radius, in units of `std`.
      min_samples: high-quality samples a mode needs to count as captured.

    Returns:
      A dict with `modes_covered` (int), `high_quality_fraction` (float in [0, 1]) and
      `counts` (int array `[num_modes]`, high-quality samples per mode).
    """
    samples, centers = np.asarray(samples, np.float64), np.asarray(centers, np.float64)
    if samples.ndim != 2 or centers.ndim != 2 or samples.shape[1] != centers.shape[1] or not len(samples):
        raise ValueError(
            f"samples and centers must have shapes [n, dim] and [num_modes, dim] with n >= 1. "
            f"Received: {samples.shape} and {centers.shape}"
        )
    if not std > 0:
        raise ValueError(f"std must be positive. Received: std={std!r}")
    distances = np.linalg.norm(samples[:, None, :] - centers[None, :, :], axis=-1)
    nearest = distances.argmin(axis=1)
    high_quality = distances[np.arange(len(samples)), nearest] <= threshold * std
    counts = np.bincount(nearest[high_quality], minlength=len(centers))
    return {
        "modes_covered": int(np.sum(counts >= min_samples)),
        "high_quality_fraction": float(high_quality.mean()),
        "counts": counts,
    }
