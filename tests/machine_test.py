"""What identifies this machine to a measured choice, and the user cache where such choices live."""

import os
from unittest import mock

import tensorflow as tf

import tf_fusedprop
from tests import testing_utils as tu
from tf_fusedprop import machine


class MachineTest(tu.TestCase):
    def test_user_cache_dir_follows_the_variables_in_order(self):
        with mock.patch.dict("os.environ", {"TF_FUSEDPROP_CACHE": "/c/mine", "XDG_CACHE_HOME": "/x"}):
            self.assertEqual(machine.user_cache_dir(), "/c/mine")
        with mock.patch.dict("os.environ", {"TF_FUSEDPROP_CACHE": "", "XDG_CACHE_HOME": "/x"}):
            self.assertEqual(machine.user_cache_dir(), "/x/tf_fusedprop")
        with mock.patch.dict("os.environ", {"TF_FUSEDPROP_CACHE": "", "XDG_CACHE_HOME": "", "HOME": "/home/u"}):
            self.assertEqual(machine.user_cache_dir(), "/home/u/.cache/tf_fusedprop")

    def test_cpu_model_is_read_from_cpuinfo_and_empty_where_it_names_none(self):
        path = os.path.join(self.get_temp_dir(), "cpuinfo")
        with open(path, "w") as f:
            f.write("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9B45\nflags\t\t: fpu avx2\n")
        self.assertEqual(machine.cpu_model(path), "AMD EPYC 9B45")
        with open(path, "w") as f:
            f.write("processor\t: 0\nFeatures\t: fp asimd\nCPU part\t: 0xd40\n")
        self.assertEqual(machine.cpu_model(path), "")
        self.assertEqual(machine.cpu_model(path + ".missing"), "")

    def test_cpu_flags_from_cpuinfo(self):
        path = os.path.join(self.get_temp_dir(), "cpuinfo")
        with open(path, "w") as f:
            f.write("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu AVX2 avx512_bf16\n\nflags\t\t: other\n")
        self.assertEqual(machine.cpu_flags(path), {"fpu", "avx2", "avx512_bf16"})
        self.assertEqual(machine.cpu_flags(os.path.join(self.get_temp_dir(), "missing")), frozenset())

    def test_fingerprint_names_what_decides_a_timed_choice(self):
        facts = machine.fingerprint()
        self.assertEqual(facts["tensorflow"], tf.__version__)
        self.assertEqual(facts["tf_fusedprop"], tf_fusedprop.__version__)
        self.assertEqual(facts["cpu"], machine.cpu_model())
        self.assertGreaterEqual(facts["cores"], 1)
        self.assertEqual(facts["onednn"], "1")  # conftest turns it on before TensorFlow loads

    def test_onednn_is_keyed_by_whether_it_runs_not_by_how_the_environment_spells_it(self):
        # Unset on a CPU where TensorFlow's default is on (AVX512_BF16, AMX) is the same machine
        # state as "1": both must find the same timed choices.
        from tensorflow.python.util import _pywrap_util_port

        for running, expected in ((True, "1"), (False, "0")):
            with mock.patch.object(_pywrap_util_port, "IsMklEnabled", return_value=running):
                for spelled in ("", "1", "0"):
                    with mock.patch.object(machine, "_ONEDNN_AT_IMPORT", spelled):
                        self.assertEqual(machine.fingerprint()["onednn"], expected)

    def test_the_key_is_stable_and_changes_with_any_fact(self):
        facts = machine.fingerprint()
        key = machine.fingerprint_key(facts)
        self.assertRegex(key, r"^[0-9a-f]{16}$")
        self.assertEqual(machine.fingerprint_key(dict(reversed(list(facts.items())))), key)
        for name in facts:
            self.assertNotEqual(machine.fingerprint_key({**facts, name: "other"}), key, name)


if __name__ == "__main__":
    tf.test.main()
