"""8 Gaussians on a circle of radius 2, std 0.02 (Metz et al. 2017), small MLPs."""

from configs import base


def get_config():
    """Nonsaturating loss, form fused; prints modes covered (of 8) and high-quality samples."""
    config = base.get_mixture_base_config("ring8")
    config.steps = 5_000
    config.steps_per_epoch = 250  # 20 evaluations
    return config
