"""config: validate's one-line errors, the GAN's arguments, the schedule and the JSON form."""

import json

import tensorflow as tf
from absl.testing import parameterized
from ml_collections import config_dict

import tf_fusedprop as fp
from tests import testing_utils as tu
from tf_fusedprop.experiment import config as fp_config


def _set(config, key, value):
    """`config.<key> = value` for a dotted key, of any type."""
    node = config
    *parents, last = key.split(".")
    for parent in parents:
        node = node[parent]
    with node.ignore_type():
        node[last] = value


class ValidateTest(tu.TestCase):
    @parameterized.parameters(
        (
            "ring8",
            "dataset",
            "mnist",
            r"unknown dataset: received config.dataset='mnist'; expected one of cifar10, digits, grid25, images, mnist1k, mnist5k, ring8\.",
        ),
        ("ring8", "network", "resnet", r"unknown network: received config.network='resnet'"),
        ("ring8", "network", "digits", r"network 'digits' does not fit dataset 'ring8'.*network mlp"),
        ("digits", "network", "mlp", r"network 'mlp' does not fit dataset 'digits'.*image network"),
        ("ring8", "steps", 0, r"config.steps must be a positive integer; received steps=0"),
        ("ring8", "batch_size", -8, r"config.batch_size must be a positive integer; received batch_size=-8"),
        (
            "ring8",
            "loss",
            "hinge",
            r"invalid config.loss, config.form: The hinge loss does not support form='fused'",
        ),
        ("ring8", "loss", "l2", r"invalid config.loss: Unknown GAN loss. Received: loss='l2'. Valid names: minimax"),
        ("ring8", "form", "fast", r"invalid config.form: Unknown training form. Received: form='fast'"),
        ("ring8", "n_dis", 0, r"invalid config.form, config.n_dis: n_dis must be a positive integer.*n_dis=0"),
        ("ring8", "iter_size", 0, r"invalid config.iter_size: .*Received: iter_size=0"),
        ("ring8", "iter_size", 3, r"divisible by config.iter_size; received batch_size=8, iter_size=3"),
        (
            "ring8",
            "steps",
            3,
            r"multiple of config.steps_per_epoch; received steps=3, steps_per_epoch=2 \(e.g. --config.steps=",
        ),
        ("ring8", "d_lr", -1.0, r"config.d_lr must be a positive number; received d_lr=-1.0"),
        ("ring8", "beta2", 1.0, r"config.beta2 must be in \[0, 1\); received beta2=1.0"),
        ("ring8", "eval_samples", 1, r"config.eval_samples must be 0 \(off\) or an integer >= 2"),
        (
            "ring8",
            "mixed_precision",
            "fp8",
            r"mixed_precision must be one of auto, float32, mixed_bfloat16, mixed_float16, off",
        ),
        (
            "ring8",
            "num_classes",
            8,
            r"num_classes \(a conditional GAN\) must be the classes of dataset 'ring8', which has no labels",
        ),
        ("digits", "num_classes", 7, r"must be the classes of dataset 'digits' \(10\); received num_classes=7"),
        ("digits", "num_classes", 0, r"invalid config.num_classes: num_classes must be a positive integer.*=0"),
        ("ring8", "augment", "color", r"config.augment \(DiffAugment\) transforms images; dataset 'ring8' has none"),
        (
            "digits",
            "augment",
            "color,flip",
            r"invalid config.augment: Unknown DiffAugment policy \['flip'\]. Received: policy='color,flip'",
        ),
        (
            "digits",
            "adaptive_augment.target",
            0.6,
            r"invalid config.adaptive_augment: adaptive_augment.target adapts the probability of config.augment's "
            r"operations, and it names none; set one, e.g. --config.augment=translation,cutout$",
        ),
        (
            "cifar10_cnn_ns",
            "adaptive_augment.held_out",
            16,
            r"invalid config.adaptive_augment: adaptive_augment.held_out needs real images that D never trains on, "
            r"and dataset 'cifar10' holds none back \(your images and the digit sets do\); received held_out=16, "
            r"set it to 0$",
        ),
        (
            "mnist1k64",
            "adaptive_augment.held_out",
            2000,
            r"invalid config.adaptive_augment: adaptive_augment.held_out must be a number of images from 0 to 1024 "
            r"\(D scores them all at every adjustment\); received held_out=2000$",
        ),
        (
            "digits",
            "adaptive_augment.interval",
            0,
            r"invalid config.adaptive_augment: DiffAugment's interval must be a positive integer. Received: interval=0$",
        ),
        ("digits", "ema.decay", 1.0, r"invalid config.ema: The EMA decay must be in \[0, 1\). Received: decay=1.0"),
        ("digits", "ema.start", -1, r"invalid config.ema: .*start must be an integer >= 0"),
        ("digits", "r1.gamma", -1.0, r"invalid config.r1: R1 needs gamma > 0. Received: gamma=-1.0"),
        (
            "ring8",
            "lookahead",
            config_dict.ConfigDict({"every": 10, "alpha": 0.0}),
            r"invalid config.lookahead: Lookahead's alpha must be in \(0, 1\]. Received: alpha=0.0",
        ),
        ("ring8", "lookahead.every", -1, r"invalid config.lookahead: .*every must be a positive integer"),
        ("digits", "gp.weight", -10.0, r"invalid config.gp: GradientPenalty needs weight > 0"),
        (
            "digits",
            "r1",
            config_dict.ConfigDict({"gamma": 1.0, "every": 0}),
            r"invalid config.r1: every must be a positive integer. Received: every=0",
        ),
        # A feature's other settings are checked while it is off, too (ring8: R1, GP and the
        # EMA are off; Lookahead is off for alternating, digits has it off for every form).
        ("ring8", "r1.every", 0, r"invalid config.r1: every must be a positive integer. Received: every=0"),
        ("ring8", "gp.every", 0, r"invalid config.gp: every must be a positive integer. Received: every=0"),
        ("ring8", "gp.target", "one", r"invalid config.gp: could not convert string to float: 'one'"),
        ("digits", "lookahead.alpha", 5.0, r"invalid config.lookahead: Lookahead's alpha must be in \(0, 1\]"),
        ("ring8", "ema", config_dict.ConfigDict({"decay": None, "start": -1}), r"invalid config.ema: .*start must"),
        (
            "ring8",
            "lookahead",
            config_dict.ConfigDict({"every": -1, "alpha": 0.8, "forms": "alternating"}),
            r"invalid config.lookahead: .*every must be a positive integer",
        ),
        ("ring8", "steps_per_execution", 3, r"multiple of config.steps_per_execution; received steps_per_execution=3"),
        (
            "digits",
            "image_size",
            10,
            r"network 'digits' builds images whose side is a multiple of 4; received image_size=10",
        ),
        ("digits", "image_size", 0, r"config.image_size must be a positive integer"),
        (
            "ring8",
            "generator.depth",
            3,
            r"config.generator.depth is not an argument of mlp_generator; valid: hidden_layers",
        ),
        ("ring8", "discriminator.input_dim", 3, r"config.discriminator.input_dim is set from the data"),
        ("ring8", "image_size", 16, r"unknown config keys \['image_size'\] for dataset 'ring8'"),
        ("cifar10_cnn_ns", "eval_real_samples", 1, r"config.eval_real_samples must be 0 \(off\) or an integer >= 2"),
        ("ring8", "seed", -1, r"config.seed must be an integer >= 0; received seed=-1"),
        ("ring8", "jit_compile", 1, r"config.jit_compile must be True or False; received 1"),
    )
    def test_rejects_bad_configs_in_one_line(self, name, key, value, message):
        config = tu.tiny_config(name)
        config.steps, config.steps_per_epoch = 4, 2
        _set(config, key, value)
        with self.assertRaisesRegex(fp_config.ConfigError, message) as info:
            fp_config.validate(config)
        self.assertNotIn("\n", str(info.exception))

    def test_missing_fields(self):
        config = tu.tiny_config("ring8")
        del config["seed"]
        with self.assertRaisesRegex(fp_config.ConfigError, r"the config lacks seed; build it on configs/base.py"):
            fp_config.validate(config)
        config = tu.tiny_config("digits")
        del config["image_size"]
        with self.assertRaisesRegex(fp_config.ConfigError, r"dataset 'digits' needs config fields \['image_size'\]"):
            fp_config.validate(config)


class GanArgumentsTest(tu.TestCase):
    def test_the_library_objects_of_a_config(self):
        config = tu.tiny_config("digits")
        config.r1.gamma, config.r1.every, config.gp.weight, config.augment = 0.5, 4, 10.0, "color"
        arguments = fp_config.gan_arguments(config)
        self.assertEqual(
            [repr(r) for r in arguments["regularizers"]],
            ["R1(gamma=0.5, every=4)", "GradientPenalty(weight=10.0, target=1.0, every=1)"],
        )
        self.assertEqual(
            (repr(arguments["form"]), arguments["augment"].policy), (repr(fp.SinglePass("fused")), "color")
        )
        self.assertEqual((arguments["ema"].decay, arguments["lookahead"]), (0.995, None))
        self.assertEqual(arguments["augment"].get_config(), {"policy": "color"})  # every operation on every sample
        config.adaptive_augment.target, config.adaptive_augment.ramp_images = 0.5, 1000
        self.assertEqual(
            fp_config.gan_arguments(config)["augment"].get_config(),
            {"policy": "color", "p": "auto", "target": 0.5, "interval": 4, "ramp_images": 1000},
        )
        config.dataset, config.adaptive_augment.held_out = "mnist1k", 64
        self.assertEqual(fp_config.gan_arguments(config)["augment"].get_config()["held_out"], 64)
        config.num_classes = 10
        with self.assertRaisesRegex(
            ValueError, r"^invalid config.adaptive_augment: adaptive_augment.held_out compares unconditional"
        ):
            fp_config.gan_arguments(config)

    def test_lookahead_applies_to_the_forms_it_lists(self):
        config = tu.tiny_config("ring8")
        config.lookahead.every, config.lookahead.forms = 10, "fused,adaptive"
        self.assertEqual(repr(fp_config.gan_arguments(config)["lookahead"]), "Lookahead(every=10, alpha=0.8)")
        config.form = "alternating"
        self.assertIsNone(fp_config.gan_arguments(config)["lookahead"])
        config.lookahead.forms = "simultaneous_forms"  # a rule: every form that updates both players at once
        self.assertIsNone(fp_config.gan_arguments(config)["lookahead"])
        config.form = "inverse"
        self.assertIsNotNone(fp_config.gan_arguments(config)["lookahead"])
        config.lookahead.forms = "fused,alternate"
        with self.assertRaisesRegex(fp_config.ConfigError, r"lookahead.forms names unknown forms \['alternate'\]"):
            fp_config.gan_arguments(config)

    def test_the_stray_probe_is_off_by_default_and_checked_where_it_enters(self):
        config = tu.tiny_config("ring8")
        self.assertIsNone(fp_config.gan_arguments(config)["probe"])
        config.probe.every = 25
        self.assertEqual(repr(fp_config.gan_arguments(config)["probe"]), "StrayProbe(every=25)")
        config.probe.every = -3
        with self.assertRaisesRegex(
            fp_config.ConfigError, r"^invalid config.probe: every must be a positive integer. Received: every=-3$"
        ):
            fp_config.gan_arguments(config)


class FitStepsPerExecutionTest(tu.TestCase):
    @parameterized.parameters(
        (10, 10, 50, 10),  # the epoch shorter than one call: one call per epoch
        (40, 20, 50, 20),
        (90, 15, 10, 5),  # the largest divisor of 15 not above 10
        (21, 7, 5, 1),
        (100, 50, 25, 25),  # already a divisor: unchanged, no note
    )
    def test_the_largest_divisor_of_the_epoch_not_above_the_configs(self, steps, per_epoch, per_call, fitted):
        config = tu.tiny_config("ring8")
        config.warmup = 0
        config.steps, config.steps_per_epoch, config.steps_per_execution = steps, per_epoch, per_call
        result, note = fp_config.fit_steps_per_execution(config)
        self.assertEqual(result.steps_per_execution, fitted)
        self.assertEqual(config.steps_per_execution, per_call)  # the caller's config is left alone
        if fitted == per_call:
            self.assertIsNone(note)
        else:
            self.assertEqual(
                note,
                f"config.steps_per_execution: {fitted}, not the config's {per_call}, to divide the epoch length "
                f"({per_epoch} steps); set it on the command line to choose another divisor.",
            )
            fp_config.validate(result)

    def test_invalid_numbers_are_left_to_validate(self):
        config = tu.tiny_config("ring8")
        config.steps_per_epoch = 0
        self.assertEqual(fp_config.fit_steps_per_execution(config), (config, None))

    def test_a_warm_start_is_divided_too_and_a_set_per_call_that_straddles_it_is_refused(self):
        config = tu.tiny_config("ring8")
        config.steps, config.steps_per_epoch, config.steps_per_execution, config.warmup = 100, 50, 25, 15
        result, note = fp_config.fit_steps_per_execution(config)
        self.assertEqual(result.steps_per_execution, 5)
        self.assertIn("to divide the epoch length (50 steps) and the warm start (15);", note)
        with self.assertRaisesRegex(
            fp_config.ConfigError, r"config.warmup \(15 G updates: the form switches there\) must be a multiple"
        ):
            fp_config.validate(config)


class WarmupTest(tu.TestCase):
    def test_the_form_after_a_warm_start_of_alternating_with_the_configs_n_dis(self):
        config = tu.tiny_config("ring8")
        config.warmup, config.n_dis = 250, 2
        form = fp_config.gan_arguments(config)["form"]
        self.assertEqual(repr(form), repr(fp.schedules.Warmup(fp.SinglePass("fused", n_dis=2), 250, fp.Alternating(2))))
        config.form = "alternating"  # alternating before alternating: no schedule
        self.assertEqual(repr(fp_config.gan_arguments(config)["form"]), "Alternating(n_dis=2)")
        config.form, config.warmup = "fused", -1
        with self.assertRaisesRegex(
            fp_config.ConfigError, r"^invalid config.warmup, config.alternate_every, config.auto: updates"
        ):
            fp_config.gan_arguments(config)
        config.warmup = 0
        config.auto.update(threshold=4.0, signal="loss")  # Auto's own values: the error names config.auto alone
        with self.assertRaisesRegex(fp_config.ConfigError, r"^invalid config.auto: Unknown signal for Auto; .*'loss'$"):
            fp_config.gan_arguments(config)
        config.auto.update(signal="logit_gap", peak=5.0)
        with self.assertRaisesRegex(fp_config.ConfigError, r"^invalid config.auto: peak must be .* below threshold"):
            fp_config.gan_arguments(config)

    def test_auto_holds_at_least_a_call_and_follows_its_own_probe(self):
        config = tu.tiny_config("ring8")
        config.steps, config.steps_per_epoch, config.steps_per_execution = 100, 50, 25
        config.warmup = 0
        config.auto.update(threshold=0.45, hold=10, every=5)
        with self.assertRaisesRegex(fp_config.ConfigError, r"config.auto.hold \(10 G updates .* must be at least"):
            fp_config.validate(config)
        fitted, note = fp_config.fit_steps_per_execution(config)
        self.assertEqual(fitted.steps_per_execution, 10)
        self.assertIn("to divide the epoch length (50 steps), at most config.auto.hold (10);", note)
        fitted.probe.every = 10
        with self.assertRaisesRegex(fp_config.ConfigError, r"config.probe.every must be 0 or 5; received 10"):
            fp_config.validate(fitted)
        fitted.probe.every = 5
        fp_config.validate(fitted)

    def test_one_alternating_update_every_k_after_the_warm_start_in_calls_of_any_length(self):
        config = tu.tiny_config("ring8")
        config.warmup, config.alternate_every, config.steps_per_execution = 4, 3, 8
        config.steps, config.steps_per_epoch = 16, 8
        expected = fp.schedules.Warmup(fp.schedules.Periodic("fused", every=3), updates=4)
        self.assertEqual(repr(fp_config.gan_arguments(config)["form"]), repr(expected))
        fp_config.validate(config)  # the warm start's end need not start a call: a period follows
        self.assertEqual(fp_config.fit_steps_per_execution(config), (config, None))
        config.alternate_every = 0  # a warm start alone: its switch starts a call
        with self.assertRaisesRegex(fp_config.ConfigError, r"config.warmup \(4 G updates: the form switches there\)"):
            fp_config.validate(config)
        fitted, note = fp_config.fit_steps_per_execution(config)
        self.assertEqual(fitted.steps_per_execution, 4)
        self.assertIn("config.steps_per_execution: 4, not the config's 8", note)

    def test_a_config_recorded_before_warmup_existed_reads_as_none(self):
        recorded = {"form": "fused", "ema": {"decay": 0.99, "start": 0}}
        self.assertEqual(
            fp_config.with_added_fields(recorded),
            {
                "form": "fused",
                "ema": {"decay": 0.99, "start": 0, "rampup": None},
                "warmup": 0,
                "alternate_every": 0,
                "warmup_g_lr_scale": 1.0,
                "checkpoint_minutes": 10,
                "adaptive_augment": {"target": None, "interval": 4, "ramp_images": 500_000, "held_out": 0},  # whole
                "probe": {"every": 0},  # a run recorded before the stray probe measured nothing
                "auto": {
                    "threshold": 0.0,
                    "every": 10,
                    "window": 10,
                    "hold": 100,
                    "peak": None,
                    "peak_windows": 1,
                    "signal": "stray",
                    "drop": None,
                },
            },
        )
        self.assertEqual(recorded, {"form": "fused", "ema": {"decay": 0.99, "start": 0}})  # left as it was
        # A recorded adaptive augmentation from before held-out images existed followed ADA's signal.
        adaptive = {"adaptive_augment": {"target": 0.6, "interval": 4, "ramp_images": 1000}}
        self.assertEqual(fp_config.with_added_fields(adaptive)["adaptive_augment"]["held_out"], 0)
        self.assertEqual(fp_config.with_added_fields({"warmup": 500})["warmup"], 500)
        self.assertEqual(fp_config.json_values(tu.tiny_config("ring8"))["ema"]["rampup"], None)
        self.assertEqual(set(fp_config.ADDED_FIELDS) - set(tu.tiny_config("ring8")), set())

    def test_a_run_of_your_images_recorded_before_compositing_read_as_keeping_the_hidden_colour(self):
        recorded = {"dataset": "images", "data": "icons/"}
        self.assertEqual(fp_config.with_added_fields(recorded)["background"], "none")
        self.assertNotIn("background", fp_config.with_added_fields({"dataset": "digits"}))
        self.assertEqual(fp_config.with_added_fields({**recorded, "background": "black"})["background"], "black")


class ScheduleTest(tu.TestCase):
    @parameterized.parameters((10, 5, (2, 5)), (10, 10, (1, 10)), (4, 100, (1, 4)))
    def test_epochs_and_their_length(self, steps, steps_per_epoch, expected):
        config = tu.tiny_config("ring8")
        config.steps, config.steps_per_epoch = steps, steps_per_epoch
        self.assertEqual(fp_config.schedule(config), expected)


class JsonValuesTest(tu.TestCase):
    def test_plain_json_values(self):
        config = tu.tiny_config("ring8")
        values = fp_config.json_values(config)
        self.assertEqual(values, config.to_dict())
        self.assertEqual(json.loads(json.dumps(values)), values)
        self.assertIsInstance(values["generator"], dict)


if __name__ == "__main__":
    tf.test.main()
