"""configs/: the shipped experiments, and the CIFAR-10 ones on one base as they were apart."""

import os

import tensorflow as tf
from absl.testing import parameterized

from configs import base, cifar10_cnn_hinge, cifar10_cnn_ns, cifar10_resnet_ns, images, mnist64
from tests import testing_utils as tu
from tf_fusedprop.experiment.config import validate, with_added_fields

# configs/cifar10_cnn_ns.py as it was before the three CIFAR-10 files shared
# base.get_cifar10_config (commit 535e3db), and what the others and the variants change;
# since then the base gained the feature fields (off by default) and precision "auto".
CNN_NS = {
    "batch_size": 64,
    "beta1": 0.5,
    "beta2": 0.999,
    "cache_dir": None,
    "d_lr": 0.0002,
    "data_dir": None,
    "dataset": "cifar10",
    "discriminator": {"spectral_norm": True, "width": 64},
    "eval_every": 1,
    "eval_real_samples": 50000,
    "eval_samples": 10000,
    "form": "alternating",
    "g_lr": 0.0002,
    "generator": {"width": 512},
    "grid_samples": 64,
    "inception_path": "auto",
    "iter_size": 1,
    "jit_compile": False,
    "latent_dim": 128,
    "loss": "nonsaturating",
    "mixed_precision": "auto",
    "n_dis": 1,
    "name": "cifar10_cnn_ns",
    "network": "sngan_cnn",
    "seed": 0,
    "steps": 100000,
    "steps_per_epoch": 5000,
    "steps_per_execution": 1,
    "num_classes": None,
    "ema": {"decay": None, "start": 0},
    "augment": "",
    "r1": {"gamma": 0.0, "every": 1},
    "gp": {"weight": 0.0, "every": 1},
    "lookahead": {"every": 0, "alpha": 0.5, "forms": "all_forms"},
}
CNN_HINGE = {**CNN_NS, "name": "cifar10_cnn_hinge", "loss": "hinge"}
RESNET_NS = {
    **CNN_NS,
    "name": "cifar10_resnet_ns",
    "network": "sngan_resnet",
    "d_lr": 0.0004,
    "g_lr": 0.0001,
    "generator": {"width": 256},
    "discriminator": {"spectral_norm": True, "width": 128},
}


class Cifar10ConfigsTest(tu.TestCase):
    @parameterized.parameters(
        (cifar10_cnn_ns, "", CNN_NS),
        (cifar10_cnn_ns, "alternating", CNN_NS),
        (cifar10_cnn_ns, "fused", {**CNN_NS, "form": "fused"}),
        (cifar10_cnn_hinge, "", CNN_HINGE),
        (cifar10_cnn_hinge, "alternating", CNN_HINGE),
        (cifar10_cnn_hinge, "inverse", {**CNN_HINGE, "form": "inverse"}),
        (cifar10_resnet_ns, "", RESNET_NS),
        (cifar10_resnet_ns, "alternating", RESNET_NS),
        (cifar10_resnet_ns, "fused", {**RESNET_NS, "form": "fused"}),
    )
    def test_the_same_configs_as_before_the_shared_base(self, module, variant, expected):
        config = module.get_config(variant)
        self.assertEqual(config.to_dict(), with_added_fields(expected))  # fields added since: their neutral values
        for key in ("data_dir", "inception_path", "cache_dir"):  # Overridable by strings on the command line.
            self.assertIs(config.get_ref(key).get_type(), str)

    def test_the_paper_settings_are_reachable(self):
        cnn_ns = cifar10_cnn_ns.get_config("fused")
        cnn_hinge = cifar10_cnn_hinge.get_config("inverse")
        resnet = cifar10_resnet_ns.get_config()
        self.assertEqual(
            (cnn_ns.loss, cnn_ns.form, cnn_hinge.loss, cnn_hinge.form), ("nonsaturating", "fused", "hinge", "inverse")
        )
        for config in (cnn_ns, cnn_hinge, resnet):
            self.assertEqual(
                (config.batch_size, config.beta1, config.beta2, config.dataset), (64, 0.5, 0.999, "cifar10")
            )
            validate(config)
        self.assertEqual((cnn_ns.d_lr, cnn_ns.g_lr, resnet.d_lr, resnet.g_lr), (2e-4, 2e-4, 4e-4, 1e-4))
        self.assertEqual((resnet.network, resnet.form), ("sngan_resnet", "alternating"))
        with self.assertRaisesRegex(ValueError, "unknown config variant 'fused'"):
            cifar10_cnn_hinge.get_config("fused")


class BaseTest(tu.TestCase):
    def test_form_variant(self):
        self.assertEqual(base.form_variant("", ("alternating", "fused"), "alternating"), "alternating")
        self.assertEqual(base.form_variant("fused", ("alternating", "fused"), "alternating"), "fused")
        with self.assertRaisesRegex(
            ValueError,
            r"unknown config variant 'x'; expected one of alternating, fused \(e.g. --config=configs/<file>.py:fused\)",
        ):
            base.form_variant("x", ("alternating", "fused"), "alternating")

    def test_every_shipped_config_is_valid_and_named_after_its_file(self):
        for name, module in tu.CONFIG_MODULES.items():
            config = module.get_config()
            if name == "images":  # the user's images: a folder of them, one batch
                config.data = tu.image_folder(os.path.join(self.get_temp_dir(), "images"), count=config.batch_size)
                config.cache_dir = self.get_temp_dir()
            validate(config)
            self.assertEqual(config.name, name)


class Mnist64Test(tu.TestCase):
    def test_it_is_the_user_images_config_but_for_its_data_and_schedule(self):
        # mnist64 measures configs/images.py's defaults (issue 48): an edit of those must carry over.
        for variant in ("", "alternating"):
            ours, theirs = mnist64.get_config(variant).to_dict(), images.get_config(variant).to_dict()
            schedule = ("name", "dataset", "steps", "steps_per_epoch", "eval_every", "eval_samples", "grid_samples")
            for key in schedule:
                ours.pop(key)
                theirs.pop(key)
            for key in mnist64._USER_IMAGES_ONLY:
                theirs.pop(key)
            self.assertEqual(ours, theirs)
            self.assertEqual((ours["image_size"], ours["augment"], ours["ema"]["rampup"]), (64, "", 0.05))


if __name__ == "__main__":
    tf.test.main()
