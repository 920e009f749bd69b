"""image_decoding: one image's bytes to a square image; here, a JPEG's EXIF orientation."""

import io
import struct

import numpy as np
import tensorflow as tf
from absl.testing import parameterized
from PIL import Image, ImageOps  # matplotlib's dependency, in the test extra: the orientation oracle

from tests import testing_utils as tu
from tf_fusedprop.experiment import image_decoding

#: 2 x 3 blocks of 8 px, each its own colour: JPEG keeps them, and every turn or mirror differs.
BLOCKS = np.kron(np.arange(18, dtype=np.uint8).reshape(2, 3, 3) * 14, np.ones((8, 8, 1), np.uint8))


def exif_jpeg(pixels, orientation, byte_order="II"):
    """A JPEG of `pixels` (uint8 [h, w, 3]) carrying an EXIF APP1 segment with `orientation`."""
    fmt = "<" if byte_order == "II" else ">"
    tiff = byte_order.encode() + struct.pack(fmt + "HI", 42, 8)
    tiff += struct.pack(fmt + "HHHIHHI", 1, 0x0112, 3, 1, orientation, 0, 0)  # one entry, then no next IFD
    payload = b"Exif\x00\x00" + tiff
    jpeg = tf.io.encode_jpeg(pixels, quality=100).numpy()
    return jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload + jpeg[2:]


class OrientationTest(tu.TestCase):
    @parameterized.product(orientation=tuple(range(1, 9)), byte_order=("II", "MM"))
    def test_each_exif_orientation_is_applied_as_pillow_applies_it(self, orientation, byte_order):
        raw = exif_jpeg(BLOCKS, orientation, byte_order)
        self.assertEqual(image_decoding.exif_orientation(raw), orientation)
        ours = image_decoding.oriented(tf.io.decode_jpeg(raw).numpy(), orientation)
        pillow = np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(raw))))  # the independent oracle
        self.assertEqual(ours.shape, pillow.shape)
        self.assertLess(np.abs(ours.astype(int) - pillow.astype(int)).max(), 3)

    def test_no_or_damaged_exif_is_as_stored(self):
        plain = tf.io.encode_jpeg(BLOCKS).numpy()
        self.assertEqual(image_decoding.exif_orientation(plain), 1)
        self.assertEqual(image_decoding.exif_orientation(b"\x89PNG\r\n\x1a\n"), 1)
        damaged = exif_jpeg(BLOCKS, 6)[:30]  # cut inside the orientation entry
        self.assertEqual(image_decoding.exif_orientation(damaged), 1)
        self.assertEqual(image_decoding.exif_orientation(exif_jpeg(BLOCKS, 9)), 1)  # not an orientation


if __name__ == "__main__":
    tf.test.main()
