"""One image's bytes to a square image: `decode(raw, image_size)` is what `image_files` does
with each file of a folder or zip (and, from `opaque` on, with each TFDS image).

    image, transparent = image_decoding.decode(raw, 64)   # float32 [64, 64, 1 or 3] in [0, 255]

Format: `looks_like_an_image` knows a PNG, JPEG, GIF (its first frame), BMP or WebP by its first
bytes; anything else is refused without asking TensorFlow, which would log a warning for each.

Speed: a JPEG at least twice the target size is decoded at 1/2, 1/4 or 1/8 of its size by
libjpeg's DCT scaling (`reduce_jpegs`), so a phone photo decodes at the speed of the decoder
rather than of a full-size decode and resize.

Orientation: a JPEG's EXIF orientation (a phone's portrait photo is stored sideways with a tag
saying how to turn it) is applied before the crop, all eight of them (`exif_orientation`,
`oriented`), so the images are upright as every viewer shows them.

Transparency: an image with an alpha channel is composited onto `background` (`BACKGROUNDS`,
or "#rrggbb"; white by default: icons, logos and cut-out photos are drawn to be seen on a light
page, and the colour stored under transparent pixels is whatever the editor left there, often
garbage) before it is cropped and resized (`opaque`), so the hidden colour never shows; "none"
keeps that colour (alpha dropped).

Then `square` centre-crops the image to a square and resizes it with antialiasing (bicubic) to
`image_size`. The values stay float32 in [0, 255], with the image's own channels (1 or 3):
`image_files` makes them RGB or gray (`with_channels`) and rounds them to the uint8 images of its
cache, so a change to what `decode` returns must bump `image_files.VERSION`, part of the cache's
key.
"""

import numpy as np
import tensorflow as tf

__all__ = [
    "BACKGROUNDS",
    "background_color",
    "decode",
    "exif_orientation",
    "looks_like_an_image",
    "opaque",
    "oriented",
    "square",
    "with_channels",
]

#: The first bytes of each format TensorFlow decodes (WebP: "RIFF", 4 bytes of size, "WEBP").
_JPEG = b"\xff\xd8\xff"
_MAGIC = (b"\x89PNG\r\n\x1a\n", _JPEG, b"GIF87a", b"GIF89a", b"BM")


def looks_like_an_image(raw):
    """Whether `raw` starts as a PNG, JPEG, GIF, BMP or WebP file does: others are skipped
    without asking TensorFlow, which would log a warning for each."""
    return raw.startswith(_MAGIC) or (raw[:4] == b"RIFF" and raw[8:12] == b"WEBP")


def decode(raw, image_size, reduce_jpegs=True, background="white"):
    """One image's bytes -> `(float32 [image_size, image_size, c] in [0, 255], transparent)` (c 1
    or 3): decoded, turned upright, composited onto `background` (`opaque`), centre-cropped to a
    square, resized with antialiasing; `transparent` says whether it had a pixel not fully opaque.

    A JPEG whose short side is at least twice `image_size` is decoded at 1/2, 1/4 or 1/8 of its
    size (libjpeg's DCT scaling: each 8x8 block's lowest frequencies, the block averaged at 1/8),
    the most that keeps the short side >= `image_size`; a phone photo at 64 px decodes ~3x faster
    and is resized from ~375 px instead of 3,000. `reduce_jpegs=False` decodes at full size.

    Raises:
      ValueError: not an image file of a format TensorFlow decodes.
    """
    if not looks_like_an_image(raw):
        raise ValueError("not a PNG, JPEG, GIF, BMP or WebP file")
    if raw.startswith(_JPEG) and reduce_jpegs:
        height, width = tf.io.extract_jpeg_shape(raw).numpy()[:2]
        ratio = next((r for r in (8, 4, 2) if min(height, width) >= r * image_size), 1)
        image = tf.io.decode_jpeg(raw, ratio=ratio).numpy()
    else:
        image = tf.io.decode_image(raw, expand_animations=False).numpy()  # GIF: its first frame
    image, transparent = opaque(oriented(image, exif_orientation(raw)), background)
    return square(image, image_size), transparent


def exif_orientation(raw):
    """The EXIF orientation (1-8) of a JPEG's bytes `raw`; 1 (as stored) when it has none."""
    if not raw.startswith(b"\xff\xd8"):
        return 1
    position = 2
    while position + 4 <= len(raw) and raw[position] == 0xFF:
        marker = raw[position + 1]
        if marker == 0xFF:  # a fill byte
            position += 1
            continue
        if marker in (0xD9, 0xDA):  # the end, or the image data: no EXIF before it
            break
        length = int.from_bytes(raw[position + 2 : position + 4], "big")
        if marker == 0xE1 and raw[position + 4 : position + 10] == b"Exif\x00\x00":
            return _tiff_orientation(raw[position + 10 : position + 2 + length])
        position += 2 + length
    return 1


def _tiff_orientation(tiff):
    """Tag 0x0112 of the first IFD of an EXIF TIFF block; 1 where it is missing or damaged."""
    if tiff[:2] not in (b"II", b"MM"):
        return 1
    order = "little" if tiff[:2] == b"II" else "big"

    def number(offset, size):
        return int.from_bytes(tiff[offset : offset + size], order)

    ifd = number(4, 4)
    if ifd + 2 > len(tiff):
        return 1
    for index in range(number(ifd, 2)):
        entry = ifd + 2 + 12 * index
        if entry + 12 > len(tiff):
            break
        if number(entry, 2) == 0x0112:
            value = number(entry + 8, 2)
            return value if 1 <= value <= 8 else 1
    return 1


# Per EXIF orientation: what turns the stored `[h, w, c]` pixels upright.
_UPRIGHT = {
    1: lambda image: image,
    2: lambda image: image[:, ::-1],  # mirrored left-right
    3: lambda image: image[::-1, ::-1],  # rotated 180
    4: lambda image: image[::-1],  # mirrored top-bottom
    5: lambda image: image.transpose(1, 0, 2),  # mirrored along the main diagonal
    6: lambda image: np.rot90(image, -1),  # stored turned 90 counter-clockwise: turn it clockwise
    7: lambda image: image.transpose(1, 0, 2)[::-1, ::-1],  # mirrored along the other diagonal
    8: lambda image: np.rot90(image, 1),  # stored turned 90 clockwise
}


def oriented(image, orientation):
    """A decoded `[h, w, c]` image turned upright as its EXIF `orientation` (1-8) says."""
    return np.ascontiguousarray(_UPRIGHT[orientation](np.asarray(image)))


#: The luma of an RGB pixel: ITU-R 601's weights (a gray image's background, RGB made gray).
_LUMA = np.array([0.299, 0.587, 0.114], np.float32)
#: The named backgrounds (`BACKGROUNDS`, or "#rrggbb"; "none" drops alpha without compositing).
BACKGROUNDS = {"white": (255, 255, 255), "black": (0, 0, 0), "gray": (128, 128, 128)}


def background_color(background):
    """The RGB of a `background` setting: a name of `BACKGROUNDS` or "#rrggbb"; None for "none".

    Raises:
      ValueError: another value (one line).
    """
    if background == "none":
        return None
    if background in BACKGROUNDS:
        return BACKGROUNDS[background]
    text = background[1:] if isinstance(background, str) and background.startswith("#") else ""
    if len(text) == 6 and all(c in "0123456789abcdefABCDEF" for c in text):
        return tuple(int(text[i : i + 2], 16) for i in (0, 2, 4))
    raise ValueError(f"a background is one of {', '.join(BACKGROUNDS)}, #rrggbb or none; received {background!r}")


def opaque(image, background):
    """A decoded image `[h, w, c]` (uint8) without its alpha channel (c 2 or 4), composited
    onto `background` (`background_color`; "none": the colour stored beneath is kept), and
    whether any pixel was not fully opaque."""
    channels = image.shape[-1]
    if channels not in (2, 4):
        return image, False
    color, alpha = image[..., : channels - 1], image[..., channels - 1 :]
    transparent = bool((alpha < 255).any())
    fill = background_color(background)
    if not transparent or fill is None:
        return color, transparent
    fill = np.asarray(fill, np.float32)
    if channels == 2:
        fill = fill @ _LUMA
    opacity = alpha.astype(np.float32) / 255.0
    return color.astype(np.float32) * opacity + fill * (1.0 - opacity), True


def square(image, image_size):
    """A decoded image `[h, w, c]` without alpha -> float32 `[image_size, image_size, 1 or 3]` in
    [0, 255]: centre-cropped to a square, resized (bicubic) with antialiasing."""
    image = tf.convert_to_tensor(image)
    height, width = image.shape[0], image.shape[1]
    side = min(height, width)
    top, left = (height - side) // 2, (width - side) // 2
    crop = tf.cast(image[top : top + side, left : left + side], tf.float32)
    if side != image_size:
        crop = tf.image.resize(crop, [image_size, image_size], method="bicubic", antialias=True)
    return np.clip(crop.numpy(), 0.0, 255.0)


def with_channels(image, channels):
    """A decoded image `[..., c]` with `channels` (1 or 3) channels: as it is when it has them,
    gray replicated into RGB, or RGB to gray by its luma (ITU-R 601 weights)."""
    if image.shape[-1] == channels:
        return image
    if channels == 3:
        return np.repeat(image, 3, axis=-1)
    return np.sum(image * _LUMA, axis=-1, keepdims=True)
