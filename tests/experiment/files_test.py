"""files: the one atomic write (files and directories, nothing left behind on failure) and JSON."""

import os
import subprocess
import sys

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
        self.assertTrue(tmp_path.endswith("~epoch_0001.weights.h5"))  # Keras checks suffixes.
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


class FullDiskTest(tu.TestCase):
    def test_a_full_disk_is_one_line_saying_what_where_and_how_much_and_leaves_the_old_file(self):
        disk = tu.small_disk(self, megabytes=1)
        path = os.path.join(disk, "summary.json")
        files.write_json(path, {"steps": 1})
        tu.fill_disk(disk)
        with self.assertRaises(files.WriteError) as caught:
            files.write_json(path, {"steps": 2, "history": ["x" * 100] * 100}, "the summary")
        self.assertRegex(
            str(caught.exception),
            rf"^cannot write the summary to {disk}/summary.json: No space left on device \(it needs [\d.]+ (kB|bytes), "
            r"0 bytes free there\)$",
        )
        self.assertEqual(sorted(os.listdir(disk)), ["filler", "summary.json"])
        self.assertEqual(files.read_json(path), {"steps": 1})

    def test_tensorflows_own_writer_on_a_full_disk_is_a_write_error_too(self):
        disk = tu.small_disk(self, megabytes=1)
        module = tf.Module()
        module.v = tf.Variable(tf.zeros([400_000]))  # 1.6 MB

        with self.assertRaises(files.WriteError) as caught:
            files.atomic_write(
                os.path.join(disk, "generator"), lambda tmp: tf.saved_model.save(module, tmp), "the generator"
            )
        self.assertIn("cannot write the generator to", str(caught.exception))
        self.assertIn("No space left on device", str(caught.exception))
        self.assertEqual(os.listdir(disk), [])

    def test_a_read_only_directory(self):
        if os.geteuid() == 0:
            self.skipTest("root writes into read-only directories")
        directory = self.get_temp_dir()
        os.chmod(directory, 0o500)
        self.addCleanup(os.chmod, directory, 0o700)
        with self.assertRaisesRegex(files.WriteError, "Permission denied"):
            files.write_json(os.path.join(directory, "a.json"), {})

    def test_a_free_space_check_for_writers_that_do_not_report(self):
        disk = tu.small_disk(self, megabytes=1)
        files.check_free_space(disk, "the summaries")
        tu.fill_disk(disk)
        with self.assertRaisesRegex(files.WriteError, r"^cannot write the summaries to .*: No space left on device"):
            files.check_free_space(disk, "the summaries")


class StaleTemporariesTest(tu.TestCase):
    def test_a_killed_processs_temporaries_go_a_live_ones_and_other_files_stay(self):
        directory = self.get_temp_dir()
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
        dead_pid = int(dead.stdout)
        seen = []
        files.atomic_write(
            os.path.join(directory, "x.json"), lambda tmp: seen.append(os.path.basename(tmp)) or open(tmp, "w").close()
        )
        dead_name = seen[0].replace(f".tmp{os.getpid()}@", f".tmp{dead_pid}@")
        live_name = seen[0].replace("x.json", "y.json")
        other_host = seen[0].replace("@", "@another-").replace("x.json", "z.json")
        os.makedirs(os.path.join(directory, dead_name, "variables"))  # a directory, as an image cache's
        for name in (live_name, other_host, "keep.txt"):
            open(os.path.join(directory, name), "w").close()
        removed = files.remove_stale_temporaries(directory)
        self.assertEqual(removed, [os.path.join(directory, dead_name)])
        self.assertEqual(sorted(os.listdir(directory)), sorted([live_name, other_host, "keep.txt", "x.json"]))


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
