"""25 Gaussians on a 5x5 grid at -4..4, std 0.05 (Metz et al. 2017), small MLPs."""

from configs import base


def get_config():
    """Nonsaturating loss, form fused; prints modes covered (of 25) and high-quality samples."""
    config = base.get_mixture_base_config("grid25")
    config.steps = 10_000
    config.steps_per_epoch = 500  # 20 evaluations
    return config
