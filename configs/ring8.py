"""8 Gaussians on a circle of radius 2, std 0.02 (Metz et al. 2017), small MLPs."""

from configs import base


def get_config():
    """Nonsaturating loss, form fused; prints modes covered (of 8) and high-quality samples.

    A warm start of 250 alternating G updates before the fused form, and no Lookahead: measured
    with 5 seeds (docs/quality.md#a-schedule-of-forms, benchmarks/results/quality_warmup_ring8/),
    it reaches 8/8 modes with >= 80% high-quality samples in alternating's 2,000 updates on every
    seed (0.85x alternating's modelled time) and ends with 8.0 +- 0.0 modes, 94 +- 1% HQ; pure
    fused needed 2,500 updates (4/5 seeds) with Lookahead, and Lookahead after a warm start only
    slowed it (2,250-2,500). `--config.warmup=0 --config.lookahead.every=10` is the previous config.
    """
    config = base.get_mixture_base_config("ring8")
    config.steps = 5_000
    config.steps_per_epoch = 250  # 20 evaluations
    config.warmup = 250
    config.lookahead.every = 0
    return config
