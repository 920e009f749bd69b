"""downloads: reachability and SavedModel archives fetched once, failing fast offline (local servers only)."""

import io
import os
import tarfile
import time

import tensorflow as tf

from tests import testing_utils as tu
from tf_fusedprop.experiment import downloads


def tar_gz(files, top=""):
    """A .tar.gz of `{name: bytes}`, under the folder `top` if given."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(os.path.join(top, name))
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


MODULE = {"saved_model.pb": b"graph", "variables/variables.index": b"index"}


class CheckReachableTest(tu.TestCase):
    def test_any_answer_is_reachable(self):
        with tu.http_server({}) as (base, requests):
            downloads.check_reachable(f"{base}/missing")  # A 404 is an answer.
        self.assertEqual(requests, ["HEAD /missing"])

    def test_a_closed_port_fails_at_once_in_one_line(self):
        url = tu.closed_port_url("/cifar.tar.gz")
        start = time.perf_counter()
        with self.assertRaisesRegex(downloads.DownloadError, rf"^cannot reach {url} \(ConnectionRefusedError: .*\)$"):
            downloads.check_reachable(url)
        self.assertLess(time.perf_counter() - start, 2.0)

    def test_a_server_that_never_answers_fails_after_the_timeout(self):
        with tu.silent_server() as url:
            start = time.perf_counter()
            with self.assertRaisesRegex(downloads.DownloadError, rf"{url}.* (within 1 s|timed out)"):
                downloads.check_reachable(url, timeout=1.0)
            self.assertLess(time.perf_counter() - start, 3.0)

    def test_file_urls(self):
        path = os.path.join(self.get_temp_dir(), "here")
        open(path, "w").close()
        downloads.check_reachable(f"file://{path}")
        with self.assertRaisesRegex(downloads.DownloadError, "no such file"):
            downloads.check_reachable(f"file://{path}-not")


class CachedSavedModelTest(tu.TestCase):
    def test_a_hub_handle_is_downloaded_once_in_its_compressed_form(self):
        cache = self.get_temp_dir()
        routes = {"/tensorflow/tfgan/eval/inception/1?tf-hub-format=compressed": tar_gz(MODULE)}
        with tu.http_server(routes) as (base, requests):
            url = f"{base}/tensorflow/tfgan/eval/inception/1"
            lines = []
            first = downloads.cached_saved_model(url, cache, log=lines.append)
            again = downloads.cached_saved_model(url, cache, log=lines.append)
        self.assertEqual(requests, list(routes))  # One request: the second call found the cache.
        self.assertEqual(first, again)
        self.assertEqual(os.path.dirname(first), cache)
        self.assertEqual(os.listdir(cache), [os.path.basename(first)])  # No temporary file left.
        with open(os.path.join(first, "variables", "variables.index"), "rb") as f:
            self.assertEqual(f.read(), b"index")
        self.assertLen(lines, 1)
        self.assertIn("?tf-hub-format=compressed into", lines[0])

    def test_a_file_url_of_an_archive_with_a_top_folder_and_of_a_directory(self):
        directory = self.get_temp_dir()
        archive = os.path.join(directory, "module.tar.gz")
        with open(archive, "wb") as f:
            f.write(tar_gz(MODULE, top="inception"))
        module = downloads.cached_saved_model(f"file://{archive}", os.path.join(directory, "cache"))
        self.assertEqual(sorted(os.listdir(module)), ["saved_model.pb", "variables"])
        self.assertEqual(downloads.cached_saved_model(f"file://{module}", "/nonexistent"), module)

    def test_failures_leave_nothing_in_the_cache(self):
        cache = self.get_temp_dir()
        routes = {"/bad.tar.gz": b"not an archive", "/empty.tar.gz": tar_gz({"README": b"hi"})}
        with tu.http_server(routes) as (base, _):
            for path, message in [
                ("/missing.tar.gz", r"answered HTTP 404"),
                ("/bad.tar.gz", r"is not a .tar.gz archive \(ReadError"),
                ("/empty.tar.gz", r"holds no SavedModel"),
            ]:
                with self.assertRaisesRegex(downloads.DownloadError, message):
                    downloads.cached_saved_model(base + path, cache)
        self.assertEqual(os.listdir(cache), [])
        offline = tu.closed_port_url("/tensorflow/tfgan/eval/inception/1")
        lines, missing = [], os.path.join(cache, "not-created")
        with self.assertRaisesRegex(
            downloads.DownloadError, r"^cannot reach .*\?tf-hub-format=compressed \(Connection"
        ):
            downloads.cached_saved_model(offline, missing, log=lines.append)
        self.assertFalse(os.path.exists(missing))  # Offline, nothing is created.
        self.assertEqual(lines, [])  # Nor said to be downloaded.


if __name__ == "__main__":
    tf.test.main()
