"""precision.choose: the policy "auto" picks from the hardware, driven here by faked detection input."""

from absl.testing import parameterized

from tests import testing_utils as tu
from tf_fusedprop import precision

AMX_XEON = {"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"}
ZEN4_EPYC = {"avx2", "avx512f", "avx512_bf16", "avx512_vnni"}
AVX2_EPYC = {"avx2", "fma", "sse4_2"}


class ChooseTest(tu.TestCase):
    @parameterized.parameters(
        (AMX_XEON, [], "mixed_bfloat16", "avx512_bf16 and amx_bf16"),
        (ZEN4_EPYC, [], "mixed_bfloat16", "avx512_bf16"),
        (AVX2_EPYC, [], "float32", "neither avx512_bf16 nor amx_bf16"),
        (
            AVX2_EPYC,
            [("NVIDIA A100", (8, 0))],
            "mixed_bfloat16",
            "NVIDIA A100 (compute capability 8.0) supports bfloat16",
        ),
        (AVX2_EPYC, [("NVIDIA H200", (9, 0)), ("NVIDIA H200", (9, 0))], "mixed_bfloat16", "supports bfloat16"),
        (AMX_XEON, [("Tesla V100", (7, 0))], "mixed_float16", "Tesla V100 (compute capability 7.0) lacks bfloat16"),
        (AVX2_EPYC, [("NVIDIA A100", (8, 0)), ("Tesla T4", (7, 5))], "mixed_float16", "lacks bfloat16"),
    )
    def test_auto(self, flags, gpus, policy, reason):
        chosen = precision.choose("auto", flags=flags, gpus=gpus)
        self.assertEqual(chosen.policy, policy)
        self.assertIn(reason, chosen.reason)
        self.assertEqual(chosen.loss_scaling, policy == "mixed_float16")
        self.assertEqual(chosen.layer_dtype, None if policy == "float32" else policy)

    def test_explicit_settings(self):
        for setting in ("float32", "mixed_bfloat16", "mixed_float16"):
            self.assertEqual(precision.choose(setting, flags=AVX2_EPYC, gpus=[]), (setting, "set explicitly"))
        self.assertEqual(precision.choose("off").policy, "float32")
        with self.assertRaisesRegex(ValueError, "Received: mixed_precision='fp8'; expected one of auto"):
            precision.choose("fp8")

    def test_detection_on_this_machine_runs(self):
        chosen = precision.choose("auto")
        self.assertIn(chosen.policy, ("float32", "mixed_bfloat16", "mixed_float16"))
        self.assertTrue(chosen.reason.startswith("auto: "))
