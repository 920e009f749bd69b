"""_startup: what is said before TensorFlow loads (oneDNN off by TensorFlow's default on AVX2-only CPUs)."""

import tensorflow as tf

from tests import testing_utils as tu
from tf_fusedprop import _startup

AVX2_EPYC = {"fpu", "avx", "avx2", "fma"}
ZEN4 = AVX2_EPYC | {"avx512f", "avx512_vnni", "avx512_bf16"}
XEON_AMX = AVX2_EPYC | {"avx512f", "avx512_vnni", "amx_tile", "amx_bf16"}


class OneDNNNoteTest(tu.TestCase):
    def test_said_once_on_an_avx2_only_cpu_before_tensorflow_loads_unless_the_user_chose(self):
        note = _startup.onednn_note(AVX2_EPYC, environ={}, tensorflow_loaded=False)
        self.assertRegex(note, r"^tf_fusedprop: TensorFlow leaves oneDNN off on this CPU .* TF_ENABLE_ONEDNN_OPTS=1 ")
        self.assertNotIn("\n", note)
        for flags, environ, loaded in (
            (ZEN4, {}, False),  # TensorFlow's default is on there
            (XEON_AMX, {}, False),
            (AVX2_EPYC, {"TF_ENABLE_ONEDNN_OPTS": "0"}, False),  # the user chose
            (AVX2_EPYC, {"TF_ENABLE_ONEDNN_OPTS": "1"}, False),
            (AVX2_EPYC, {}, True),  # too late to matter: TensorFlow read the switch already
            ({"fp", "asimd"}, {}, False),  # not x86
            (set(), {}, False),  # flags unreadable
        ):
            self.assertIsNone(_startup.onednn_note(flags, environ=environ, tensorflow_loaded=loaded), (flags, environ))


if __name__ == "__main__":
    tf.test.main()
