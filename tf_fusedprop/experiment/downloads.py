"""Downloads that fail fast offline: a reachability check, and SavedModels fetched once into a cache.

Training machines may or may not have internet. Each network call here gets an answer or
fails within `TIMEOUT` seconds, name resolution included (the call runs in a helper thread
that is given up on after the timeout), so an offline machine gets a one-line
`DownloadError` in seconds instead of waiting minutes for TCP to give up. URLs are `http://`,
`https://` or `file://`; proxies are taken from the environment (`https_proxy`...), as `urllib`
does.

`cached_saved_model(url, cache_dir)` resolves a TF-Hub style handle (e.g.
`https://tfhub.dev/tensorflow/tfgan/eval/inception/1`) to a local SavedModel directory: the
first call downloads its compressed form (`?tf-hub-format=compressed`, a .tar.gz whose root
is the SavedModel) and extracts it into `cache_dir/<sha1 of the URL>`, TF-Hub's own cache
layout; later calls find it there and download nothing.
"""

import hashlib
import os
import shutil
import tarfile
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request

from tf_fusedprop.experiment import files
from tf_fusedprop.machine import user_cache_dir  # also this module's: where downloads go by default

__all__ = [
    "TIMEOUT",
    "DownloadError",
    "cached_saved_model",
    "check_reachable",
    "default_cache_dir",
    "is_url",
    "user_cache_dir",
]

#: Seconds to wait for an answer (connection, headers, or the next block of data).
TIMEOUT = 10.0

_SCHEMES = ("http://", "https://", "file://")
_CHUNK = 1 << 20


class DownloadError(OSError):
    """A URL could not be reached or fetched; the message is one line saying why."""


def is_url(path):
    """Whether `path` is a URL that this module downloads (http, https or file)."""
    return str(path).lower().startswith(_SCHEMES)


def default_cache_dir():
    """Where downloaded modules go: `$TFHUB_CACHE_DIR` (TF-Hub's variable) if set, else
    `user_cache_dir()/tfhub_modules`."""
    if os.environ.get("TFHUB_CACHE_DIR"):
        return os.environ["TFHUB_CACHE_DIR"]
    return os.path.join(user_cache_dir(), "tfhub_modules")


def _reason(err):
    if isinstance(err, urllib.error.URLError) and not isinstance(err, urllib.error.HTTPError):
        err = err.reason if isinstance(err.reason, BaseException) else err
    return " ".join(f"{type(err).__name__}: {err}".split())


def _open(url, timeout, method=None):
    """`urlopen(url)` answered within `timeout` seconds, name resolution included.

    Raises:
      urllib.error.HTTPError: the server answered with an error status.
      DownloadError: no answer (offline, refused, unknown host, timed out).
    """
    result = {}

    def call():
        try:
            result["response"] = urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=timeout)
        except BaseException as err:  # Handed to the caller's thread.
            result["error"] = err

    thread = threading.Thread(target=call, name="tf_fusedprop-download", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():  # e.g. a name lookup that does not answer: left to finish on its own.
        raise DownloadError(f"no answer from {url} within {timeout:g} s")
    if "error" in result:
        error = result["error"]
        if isinstance(error, urllib.error.HTTPError):
            raise error
        raise DownloadError(f"cannot reach {url} ({_reason(error)})") from None
    return result["response"]


def check_reachable(url, timeout=None):
    """Returns if `url`'s server answers (any HTTP status) within `timeout` seconds.

    Raises:
      DownloadError: it does not (offline, refused, unknown host, timed out).
    """
    timeout = TIMEOUT if timeout is None else timeout
    if url.lower().startswith("file://"):
        if not os.path.exists(urllib.request.url2pathname(urllib.parse.urlparse(url).path)):
            raise DownloadError(f"cannot reach {url} (no such file)")
        return
    try:
        _open(url, timeout, method="HEAD").close()
    except urllib.error.HTTPError:
        pass  # The server answered.


def _connect(url, timeout):
    """The response to GET `url`, within `timeout` seconds.

    Raises:
      DownloadError: no answer, or an HTTP error status.
    """
    try:
        return _open(url, timeout)
    except urllib.error.HTTPError as err:
        raise DownloadError(f"{url} answered HTTP {err.code} {err.reason}") from None


def _save(response, url, path):
    """Writes the body of `response` to the file `path` (atomically)."""

    def write(tmp_path):
        with response, open(tmp_path, "wb") as f:
            try:
                shutil.copyfileobj(response, f, _CHUNK)
            except OSError as err:  # A stalled or broken transfer.
                raise DownloadError(f"the download of {url} broke off ({_reason(err)})") from None

    files.atomic_write(path, write)


def _compressed_url(url):
    """The URL of a handle's .tar.gz: as given if it names an archive or has a query, else
    with TF-Hub's `?tf-hub-format=compressed`."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file" or parsed.query or parsed.path.endswith((".tar.gz", ".tgz", ".tar")):
        return url
    return f"{url}?tf-hub-format=compressed"


def _saved_model_root(directory):
    """`directory` if it holds `saved_model.pb`, else its only subdirectory that does."""
    if os.path.exists(os.path.join(directory, "saved_model.pb")):
        return directory
    found = [
        os.path.join(directory, name)
        for name in sorted(os.listdir(directory))
        if os.path.exists(os.path.join(directory, name, "saved_model.pb"))
    ]
    return found[0] if len(found) == 1 else None


def _extract_saved_model(response, source, work, module_dir):
    """Saves the archive of `response` under `work`, extracts it and moves its SavedModel to
    `module_dir` (atomically)."""
    archive = os.path.join(work, "module.tar.gz")
    _save(response, source, archive)
    extracted = os.path.join(work, "module")
    try:
        with tarfile.open(archive, "r:*") as tar:
            tar.extractall(extracted, filter="data")
    except (tarfile.TarError, OSError, EOFError) as err:
        raise DownloadError(f"{source} is not a .tar.gz archive ({_reason(err)})") from None
    root = _saved_model_root(extracted)
    if root is None:
        raise DownloadError(f"the archive at {source} holds no SavedModel (saved_model.pb) at its root")
    files.atomic_write(module_dir, lambda tmp: os.rename(root, tmp))


def cached_saved_model(url, cache_dir=None, timeout=None, log=None):
    """The local directory of the SavedModel at `url`, downloaded and extracted on first use.

    Args:
      url: a TF-Hub style handle (`?tf-hub-format=compressed` is appended), the URL of a
        .tar.gz (`http(s)://` or `file://`) whose root, or only directory, is a SavedModel,
        or the `file://` URL of a SavedModel directory (returned as a path).
      cache_dir: where modules are kept, one directory per URL (`sha1(url)`); None for
        `default_cache_dir()`.
      timeout: seconds to wait for an answer; None for `TIMEOUT`.
      log: called with a line before a download, e.g. `print`; None for silence.

    Returns:
      The module's directory, `cache_dir/<sha1(url)>`.

    Raises:
      DownloadError: the URL cannot be reached or fetched in time, or is not a .tar.gz of a
        SavedModel. Nothing is left in the cache then.
    """
    timeout = TIMEOUT if timeout is None else timeout
    if url.lower().startswith("file://"):
        local = urllib.request.url2pathname(urllib.parse.urlparse(url).path)
        if os.path.isdir(local):  # An extracted module: nothing to download.
            return local
    cache_dir = os.fspath(cache_dir) if cache_dir is not None else default_cache_dir()
    module_dir = os.path.join(cache_dir, hashlib.sha1(url.encode("utf8")).hexdigest())
    if os.path.exists(os.path.join(module_dir, "saved_model.pb")):
        return module_dir
    source = _compressed_url(url)
    response = _connect(source, timeout)  # Offline, this fails before anything is written.
    try:
        os.makedirs(cache_dir, exist_ok=True)
        work = tempfile.mkdtemp(prefix=".download-", dir=cache_dir)
    except OSError as err:
        response.close()
        raise DownloadError(f"cannot write to the cache directory {cache_dir} ({_reason(err)})") from None
    if log is not None:
        log(f"Downloading {source} into {module_dir} (once) ...")
    try:
        _extract_saved_model(response, source, work, module_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return module_dir
