"""train_lib: a few steps of every config, workdir handling, evaluators and config validation."""

import contextlib
import io
import json
import os

import numpy as np
import pytest
import tensorflow_datasets as tfds

from configs import cifar10_cnn_hinge, cifar10_cnn_ns, cifar10_resnet_ns, digits, grid25, ring8
from tf_fusedprop.experiment import data
from tf_fusedprop.experiment import metrics
from tf_fusedprop.experiment import train_lib

MODULES = {
    "digits": digits,
    "ring8": ring8,
    "grid25": grid25,
    "cifar10_cnn_ns": cifar10_cnn_ns,
    "cifar10_cnn_hinge": cifar10_cnn_hinge,
    "cifar10_resnet_ns": cifar10_resnet_ns,
}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """One digits classifier and reference statistics for all tests of this module."""
    return str(tmp_path_factory.mktemp("cache"))


def tiny(name, variant="", cache=None):
    """The config `name` shrunk to seconds: 2 steps of batch 8 in 2 epochs, small widths."""
    module = MODULES[name]
    config = module.get_config(variant) if variant else module.get_config()
    config.batch_size = 8
    config.steps = 2
    config.steps_per_epoch = 1
    config.steps_per_execution = 1
    config.latent_dim = 8
    config.grid_samples = 4
    config.eval_samples = 20
    config.cache_dir = cache
    if config.network == "digits":
        config.generator.width = config.discriminator.width = 4
    elif config.network == "mlp":
        config.generator.units = config.discriminator.units = 8
        config.generator.hidden_layers = config.discriminator.hidden_layers = 1
    elif config.network == "sngan_cnn":
        config.generator.width, config.discriminator.width = 16, 4
    else:
        config.generator.width = config.discriminator.width = 8
    if config.dataset == "cifar10":
        config.eval_real_samples = 16
    return config


def quiet_train(config, workdir, **kwargs):
    """`train_lib.train` without its output; returns (summary, printed text)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        summary = train_lib.train(config, workdir=str(workdir), verbose=0, **kwargs)
    return summary, out.getvalue()


class FakeInception:
    """Stands in for TF-GAN's Inception (not available offline): pixels as features."""

    def __init__(self, path):
        self.path = path

    def features(self, images, batch_size=64):
        return np.asarray(images).reshape(len(images), -1)[:, :16]

    def logits(self, images, batch_size=64):
        return np.asarray(images).reshape(len(images), -1)[:, :10]


@pytest.mark.parametrize(
    "name, variant, form",
    [
        ("digits", "", "fused"),
        ("ring8", "", "fused"),
        ("grid25", "", "fused"),
        ("cifar10_cnn_ns", "", "alternating"),
        ("cifar10_cnn_hinge", "inverse", "inverse"),
        ("cifar10_resnet_ns", "fused", "fused"),
    ],
)
def test_a_few_steps_of_every_config(name, variant, form, tmp_path, cache_dir, monkeypatch):
    config = tiny(name, variant, cache_dir)
    assert config.form == form
    if config.dataset == "cifar10":
        monkeypatch.setattr(train_lib.fp_metrics, "InceptionFeatures", FakeInception)
        config.inception_path = str(tmp_path)
    with tfds.testing.mock_data(num_examples=16) if config.dataset == "cifar10" else contextlib.nullcontext():
        summary, printed = quiet_train(config, tmp_path / "run")
    run = tmp_path / "run"
    assert summary["steps"] == summary["d_steps"] == 2 and summary["epochs"] == 2
    assert sorted(os.listdir(run / "samples")) == ["epoch_0001.png", "epoch_0002.png"]
    assert summary["samples"] == str(run / "samples" / "epoch_0002.png")
    assert json.loads((run / "summary.json").read_text()) == json.loads(json.dumps(summary))
    assert json.loads((run / "config.json").read_text()) == config.to_dict()
    assert os.path.exists(run / "generator" / "saved_model.pb")
    assert os.listdir(run / "logs")
    image_data = config.dataset in ("digits", "cifar10")
    assert set(summary["metrics"]) == ({"fid", "inception_score"} if image_data else {"modes_covered", "high_quality"})
    assert summary["final_metric"]["value"] == summary["metrics"][summary["final_metric"]["name"]]
    assert ("FID (" if image_data else "modes covered: ") in printed
    if config.dataset == "cifar10":
        assert [f for f in os.listdir(cache_dir) if f.startswith("cifar10_train16_inception")]


@pytest.mark.parametrize("name, variant", [("cifar10_cnn_ns", "fused"), ("cifar10_cnn_hinge", ""), ("cifar10_resnet_ns", "")])
def test_the_other_variants_validate_and_build(name, variant):
    config = tiny(name, variant)
    train_lib.validate(config)
    gan = train_lib._build_gan(config)
    assert gan.form == config.form and gan.generator.output.shape[1:] == (32, 32, 3)


def test_cifar10_without_inception_module_trains_without_fid():
    messages = []
    assert train_lib._make_evaluator(tiny("cifar10_cnn_ns"), "unused", None, messages.append) is None
    assert messages and messages[0].startswith("FID/IS off: no Inception module; pass --config.inception_path=DIR")


def test_the_paper_settings_are_reachable():
    cnn_ns, cnn_hinge, resnet = cifar10_cnn_ns.get_config("fused"), cifar10_cnn_hinge.get_config("inverse"), cifar10_resnet_ns.get_config()
    assert (cnn_ns.loss, cnn_ns.form, cnn_hinge.loss, cnn_hinge.form) == ("nonsaturating", "fused", "hinge", "inverse")
    for config in (cnn_ns, cnn_hinge, resnet):
        assert (config.batch_size, config.beta1, config.beta2, config.dataset) == (64, 0.5, 0.999, "cifar10")
        train_lib.validate(config)
    assert (cnn_ns.d_lr, cnn_ns.g_lr, resnet.d_lr, resnet.g_lr) == (2e-4, 2e-4, 4e-4, 1e-4)
    assert (resnet.network, resnet.form) == ("sngan_resnet", "alternating")
    with pytest.raises(ValueError, match="unknown config variant 'fused'"):
        cifar10_cnn_hinge.get_config("fused")


def test_mixed_bfloat16(tmp_path):
    config = tiny("ring8")
    config.mixed_precision = "mixed_bfloat16"
    summary, _ = quiet_train(config, tmp_path)
    assert summary["steps"] == 2


def test_image_evaluator_matches_frechet_distance_of_the_features():
    rng = np.random.default_rng(0)
    real = rng.normal(size=(200, 3))

    class Extractor:
        def features(self, images):
            return np.asarray(images).reshape(len(images), -1)[:, :3]

        def logits(self, images):
            return np.zeros((len(images), 10))

    latents = rng.normal(size=(100, 3)).astype(np.float32)
    generator = lambda z, training: z + 1.0
    evaluator = train_lib._ImageEvaluator(Extractor(), metrics.activation_statistics(real), latents, "test")
    result = evaluator(generator)
    expected = metrics.frechet_distance(*metrics.activation_statistics(latents + 1.0), *metrics.activation_statistics(real))
    assert result["fid"] == pytest.approx(expected)
    assert result["inception_score"] == pytest.approx(1.0)


def test_mixture_evaluator_on_exact_and_collapsed_generators():
    centers, std = data.mixture_spec("ring8")
    latents = np.arange(80, dtype=np.float32)[:, None]
    exact = lambda z, training: centers[np.asarray(z[:, 0], int) % 8]
    collapsed = lambda z, training: np.repeat(centers[:1] + 10 * std, len(z), axis=0)
    evaluator = train_lib._MixtureEvaluator(centers, std, latents)
    assert evaluator(exact) == {"modes_covered": 8, "high_quality": 1.0}
    assert evaluator(collapsed) == {"modes_covered": 0, "high_quality": 0.0}
    assert evaluator.describe({"modes_covered": 7, "high_quality": 0.925}) == "modes covered: 7/8, high-quality samples: 92%"


def test_default_workdir_resumes_the_latest_unfinished_run_of_the_same_config(tmp_path):
    config = tiny("ring8")
    fresh = train_lib.default_workdir(config, str(tmp_path))
    assert os.path.dirname(fresh) == str(tmp_path) and os.path.basename(fresh).startswith("ring8-")

    def make_run(name, run_config, finished=False):
        os.makedirs(tmp_path / name)
        (tmp_path / name / "config.json").write_text(json.dumps(run_config.to_dict()))
        if finished:
            (tmp_path / name / "summary.json").write_text("{}")

    other = tiny("ring8")
    other.seed = 5
    make_run("ring8-20240101-000000", config)
    make_run("ring8-20240102-000000", config, finished=True)
    make_run("ring8-20240103-000000", other)
    assert train_lib.default_workdir(config, str(tmp_path)) == str(tmp_path / "ring8-20240101-000000")


def test_a_workdir_of_another_config_is_refused_and_a_finished_run_is_not_retrained(tmp_path):
    config = tiny("ring8")
    summary, _ = quiet_train(config, tmp_path)
    again, printed = quiet_train(config, tmp_path)
    assert again == json.loads(json.dumps(summary)) and "already complete" in printed
    config.seed = 3
    with pytest.raises(train_lib.ConfigError, match=r"different config \(config.seed: 0 there, 3 now\)"):
        quiet_train(config, tmp_path)


def test_unwritable_workdir(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(train_lib.ConfigError, match=r"cannot write to workdir .*file/run.*--workdir"):
        quiet_train(tiny("ring8"), tmp_path / "file" / "run")


def _set(config, key, value):
    node = config
    *parents, last = key.split(".")
    for parent in parents:
        node = node[parent]
    node[last] = value


@pytest.mark.parametrize(
    "name, key, value, message",
    [
        ("ring8", "dataset", "mnist", r"unknown dataset: received config.dataset='mnist'"),
        ("ring8", "network", "resnet", r"unknown network: received config.network='resnet'"),
        ("ring8", "network", "digits", r"network 'digits' does not fit dataset 'ring8'.*network mlp"),
        ("digits", "network", "mlp", r"network 'mlp' does not fit dataset 'digits'.*image network"),
        ("ring8", "steps", 0, r"config.steps must be a positive integer; received steps=0"),
        ("ring8", "batch_size", -8, r"config.batch_size must be a positive integer; received batch_size=-8"),
        ("ring8", "loss", "hinge", r"invalid \(loss, form\) pair: The hinge loss does not support form='fused'.*received loss='hinge'"),
        ("ring8", "loss", "l2", r"unknown loss: received config.loss='l2'; expected one of minimax"),
        ("ring8", "form", "fast", r"unknown form: received config.form='fast'"),
        ("ring8", "n_dis", 5, r"n_dis applies to form 'alternating' only; received n_dis=5"),
        ("ring8", "iter_size", 3, r"divisible by config.iter_size; received batch_size=8, iter_size=3"),
        ("ring8", "steps", 3, r"multiple of config.steps_per_epoch; received steps=3, steps_per_epoch=2 \(e.g. --config.steps="),
        ("ring8", "d_lr", -1.0, r"config.d_lr must be a positive number; received d_lr=-1.0"),
        ("ring8", "beta2", 1.0, r"config.beta2 must be in \[0, 1\); received beta2=1.0"),
        ("ring8", "eval_samples", 1, r"config.eval_samples must be 0 \(off\) or an integer >= 2"),
        ("ring8", "mixed_precision", "mixed_float16", r"mixed_precision must be one of off, mixed_bfloat16"),
        ("ring8", "steps_per_execution", 3, r"multiple of config.steps_per_execution; received steps_per_execution=3"),
        ("digits", "image_size", 10, r"image_size must be a multiple of 4 .*; received image_size=10"),
        ("ring8", "generator.depth", 3, r"config.generator.depth is not an argument of mlp_generator; valid: hidden_layers"),
        ("ring8", "discriminator.input_dim", 3, r"config.discriminator.input_dim is set from the data"),
        ("ring8", "image_size", 16, r"unknown config keys \['image_size'\] for dataset 'ring8'"),
    ],
)
def test_validate_rejects_bad_configs_in_one_line(name, key, value, message):
    config = tiny(name)
    config.steps, config.steps_per_epoch = 4, 2
    _set(config, key, value)
    with pytest.raises(train_lib.ConfigError, match=message) as info:
        train_lib.validate(config)
    assert "\n" not in str(info.value)


def test_validate_accepts_every_shipped_config():
    for module in MODULES.values():
        train_lib.validate(module.get_config())


if __name__ == "__main__":
    raise SystemExit(pytest.main([__file__]))
