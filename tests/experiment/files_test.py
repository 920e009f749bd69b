"""files: the one atomic write (files and directories, nothing left behind on failure) and JSON."""

import os

import tensorflow as tf

from tests import testing_utils as tu
from tf_fusedprop.experiment import files


def _write_text(text):
    def write(tmp_path):
        with open(tmp_path, "w") as f:
            f.write(text)

    return write


class AtomicWriteTest(tu.TestCase):
    def test_writes_under_a_temporary_name_with_the_same_suffix_then_renames(self):
        directory = self.get_temp_dir()
        path = os.path.join(directory, "epoch_0001.weights.h5")
        seen = []

        def write(tmp_path):
            seen.append(tmp_path)
            self.assertFalse(os.path.exists(path))
            _write_text("new")(tmp_path)

        files.atomic_write(path, write)
        (tmp_path,) = seen
        self.assertEqual(os.path.dirname(tmp_path), directory)
        self.assertTrue(os.path.basename(tmp_path).startswith(".tmp"))
        self.assertTrue(tmp_path.endswith("-epoch_0001.weights.h5"))  # Keras checks suffixes.
        self.assertEqual(os.listdir(directory), ["epoch_0001.weights.h5"])
        with open(path) as f:
            self.assertEqual(f.read(), "new")

    def test_replaces_an_existing_file(self):
        path = os.path.join(self.get_temp_dir(), "a.txt")
        files.atomic_write(path, _write_text("old"))
        files.atomic_write(path, _write_text("new"))
        with open(path) as f:
            self.assertEqual(f.read(), "new")

    def test_a_failing_writer_leaves_the_old_file_and_no_partial_file(self):
        directory = self.get_temp_dir()
        path = os.path.join(directory, "a.txt")
        files.atomic_write(path, _write_text("old"))

        def half_then_fail(tmp_path):
            _write_text("half")(tmp_path)
            raise RuntimeError("disk full")

        with self.assertRaisesRegex(RuntimeError, "disk full"):
            files.atomic_write(path, half_then_fail)
        self.assertEqual(os.listdir(directory), ["a.txt"])
        with open(path) as f:
            self.assertEqual(f.read(), "old")

    def test_a_failing_directory_writer_leaves_nothing(self):
        directory = self.get_temp_dir()

        def half_then_fail(tmp_path):
            os.makedirs(os.path.join(tmp_path, "variables"))
            raise KeyboardInterrupt

        with self.assertRaises(KeyboardInterrupt):
            files.atomic_write(os.path.join(directory, "generator"), half_then_fail)
        self.assertEqual(os.listdir(directory), [])

    def test_a_directory_replaces_a_directory(self):
        path = os.path.join(self.get_temp_dir(), "generator")

        def export(version):
            def write(tmp_path):
                os.makedirs(tmp_path)
                _write_text(version)(os.path.join(tmp_path, version))

            return write

        files.atomic_write(path, export("v1"))
        files.atomic_write(path, export("v2"))
        self.assertEqual(os.listdir(path), ["v2"])
        self.assertEqual(os.listdir(os.path.dirname(path)), ["generator"])


class JsonTest(tu.TestCase):
    def test_round_trip_indented_sorted_with_final_newline(self):
        path = os.path.join(self.get_temp_dir(), "summary.json")
        files.write_json(path, {"b": [1, 2], "a": None})
        with open(path) as f:
            self.assertEqual(f.read(), '{\n  "a": null,\n  "b": [\n    1,\n    2\n  ]\n}\n')
        self.assertEqual(files.read_json(path), {"a": None, "b": [1, 2]})

    def test_an_unserializable_value_leaves_no_file(self):
        directory = self.get_temp_dir()
        with self.assertRaises(TypeError):
            files.write_json(os.path.join(directory, "x.json"), {"a": object()})
        self.assertEqual(os.listdir(directory), [])


if __name__ == "__main__":
    tf.test.main()
