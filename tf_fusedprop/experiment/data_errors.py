"""The errors of data that cannot be read, in one place, so that the modules that read data
(`real_samples`, `image_files`) import it rather than each other; each says in one line what
was asked for and what to do."""

__all__ = ["DatasetUnavailableError", "ImageSourceError", "NotPreparedError"]


class DatasetUnavailableError(ValueError):
    """A dataset's files are not available locally and cannot (or may not) be downloaded."""


class ImageSourceError(DatasetUnavailableError):
    """The images cannot be read: a missing path, no image in it, nothing decodable."""


class NotPreparedError(ImageSourceError):
    """A `tfds:` source whose dataset is not prepared in its data directory."""
