"""image_files: a folder or zip of real image files (written here), decoded once into the cache."""

import os
import shutil
import subprocess
import sys
import time
from unittest import mock

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds
from PIL import Image  # matplotlib's dependency, in the test extra: files TensorFlow does not write (LA, CMYK, P)

from tests import testing_utils as tu
from tests.experiment.image_decoding_test import BLOCKS, exif_jpeg
from tf_fusedprop.experiment import files, image_decoding, image_files, real_samples

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class OpenSourceTest(tu.TestCase):
    def setUp(self):
        super().setUp()
        self.root = os.path.join(self.get_temp_dir(), "images")
        tu.write_image_tree(self.root)

    def test_a_folder_lists_its_images_recursively_with_classes_from_subfolders(self):
        source = image_files.open_source(self.root)
        self.assertLen(source.members, 6 * 2 + 5)  # the digits, RGBA, BMP, GIF, WebP and the corrupt JPEG
        self.assertIn("one/corrupt.jpg", source.members)
        self.assertNotIn("notes.txt", source.members)
        self.assertEqual(source.class_names(), ["one", "zero"])
        self.assertFalse(source.is_zip)

    def test_a_zip_of_it_has_the_same_members(self):
        archive = shutil.make_archive(os.path.join(self.get_temp_dir(), "images"), "zip", self.root)
        source = image_files.open_source(archive)
        self.assertTrue(source.is_zip)
        self.assertEqual(source.members, image_files.open_source(self.root).members)

    def test_the_fingerprint_follows_the_files(self):
        before = image_files.open_source(self.root).fingerprint
        self.assertEqual(image_files.open_source(self.root).fingerprint, before)
        os.remove(os.path.join(self.root, "zero", "b.bmp"))
        self.assertNotEqual(image_files.open_source(self.root).fingerprint, before)

    def test_a_top_level_image_means_no_classes(self):
        tf.io.write_file(os.path.join(self.root, "top.png"), tf.io.encode_png(np.zeros((4, 4, 1), np.uint8)))
        self.assertIsNone(image_files.open_source(self.root).class_names())

    def test_bad_paths_are_one_line(self):
        empty = os.path.join(self.get_temp_dir(), "empty")
        os.makedirs(os.path.join(empty, "sub"))
        text = os.path.join(self.get_temp_dir(), "file.txt")
        open(text, "w").close()
        for path, message in (
            ("/nonexistent/photos", r"config.data='/nonexistent/photos' does not exist: pass a folder of images"),
            (empty, r"holds no image file \(.png, .jpg, .jpeg, .bmp, .gif, .webp, searched recursively\)"),
            (text, r"is neither a folder nor a .zip file"),
        ):
            with self.assertRaisesRegex(image_files.ImageSourceError, message) as info:
                image_files.open_source(path)
            self.assertNotIn("\n", str(info.exception))


class PrepareTest(tu.TestCase):
    def setUp(self):
        super().setUp()
        self.root = os.path.join(self.get_temp_dir(), "images")
        self.written = tu.write_image_tree(self.root)
        self.cache = os.path.join(self.get_temp_dir(), "cache")

    def test_decoded_once_cropped_resized_with_classes_and_the_corrupt_file_skipped(self):
        lines = []
        prepared = image_files.decode_once(self.root, 16, self.cache, log=lines.append)
        self.assertEqual((prepared.images.shape, prepared.images.dtype), ((16, 16, 16, 3), np.uint8))
        self.assertEqual(prepared.skipped, [os.path.join(self.root, "one", "corrupt.jpg")])
        self.assertEqual(prepared.class_names, ["one", "zero"])
        members = [m for m in image_files.open_source(self.root).members if m != "one/corrupt.jpg"]
        self.assertAllEqual(prepared.labels, [0 if m.startswith("one/") else 1 for m in members])
        by_member = dict(zip(members, prepared.images))
        self.assertLen(self.written, 16)
        for path, digit in self.written.items():  # gray replicated into RGB; JPEG within its rounding
            tolerance = 16 if path.endswith(".jpg") else 0
            expected = np.repeat(digit, 3, axis=-1).astype(np.float32)
            if path == "one/alpha.png":  # alpha 128: half onto the white background
                expected = np.round(expected * 128 / 255 + 255 * 127 / 255)
            self.assertAllClose(by_member[path].astype(np.float32), expected, atol=tolerance, msg=path)
        self.assertFalse(prepared.reused)
        self.assertRegex(
            prepared.describe(self.root),
            r"^Images: 16 from .*images at 16x16x3, 2 classes, 1 with transparency \(composited onto white\); "
            r"skipped 1 of 17 files: .*one/corrupt.jpg \(not an image file: no PNG, JPEG, GIF, BMP or WebP header\), "
            r"each with its reason in .*/skipped.txt; prepared into .*cache/images/[0-9a-f]{16}_16px_autoc_v3_on_white.$",
        )
        self.assertEqual(
            sorted(os.listdir(prepared.cache_path)), ["images.u8", "labels.npy", "meta.json", "skipped.txt"]
        )
        again = image_files.decode_once(self.root, 16, self.cache)
        self.assertTrue(again.reused)
        self.assertIsInstance(again.images, np.memmap)  # read from disk as needed
        self.assertAllEqual(again.images, prepared.images)
        self.assertEqual((again.class_names, again.skipped), (prepared.class_names, prepared.skipped))

    def test_transparent_pixels_show_the_background_never_the_colour_stored_beneath(self):
        folder = os.path.join(self.get_temp_dir(), "icons")
        os.makedirs(folder)
        icon = np.zeros((16, 16, 4), np.uint8)
        icon[..., 0] = 230  # an editor's leftover orange beneath...
        icon[..., 1] = 120
        icon[4:12, 4:12] = (20, 40, 200, 255)  # ...an opaque blue square
        icon[4:12, 12:14, 3] = 64  # and a quarter-opaque border
        icon[4:12, 12:14, :3] = (20, 40, 200)
        tf.io.write_file(os.path.join(folder, "icon.png"), tf.io.encode_png(icon))
        gray = np.dstack([np.full((16, 16), 200, np.uint8), np.zeros((16, 16), np.uint8)])  # gray, all transparent
        Image.fromarray(gray, mode="LA").save(os.path.join(folder, "ghost.png"))
        opaque = np.full((16, 16, 3), 90, np.uint8)
        tf.io.write_file(os.path.join(folder, "plain.png"), tf.io.encode_png(opaque))
        on = {}
        for background in ("white", "black", "#102030", "none"):
            on[background] = image_files.decode_once(folder, 16, self.cache, channels=3, background=background)
        members = image_files.open_source(folder).members  # ghost.png, icon.png, plain.png
        self.assertEqual(list(members), ["ghost.png", "icon.png", "plain.png"])
        for background, fill in (("white", [255, 255, 255]), ("black", [0, 0, 0]), ("#102030", [16, 32, 48])):
            images = on[background].images
            self.assertAllEqual(images[1][0, 0], fill)  # transparent: the background, not the orange
            self.assertAllEqual(images[1][8, 8], [20, 40, 200])  # opaque: as drawn
            expected_border = np.round(np.array([20, 40, 200]) * 64 / 255 + np.array(fill) * 191 / 255)
            self.assertAllClose(images[1][8, 12], expected_border, atol=1)
            luma = round(0.299 * fill[0] + 0.587 * fill[1] + 0.114 * fill[2])
            self.assertAllClose(images[0][8, 8], [luma] * 3, atol=1)  # gray with alpha: the background's luma
            self.assertAllEqual(images[2][8, 8], [90, 90, 90])  # no alpha: untouched
            self.assertEqual((on[background].transparent, on[background].background), (2, background))
            self.assertIn("2 with transparency (composited onto", on[background].describe(folder))
        self.assertAllEqual(on["none"].images[1][0, 0], [230, 120, 0])  # what versions before did
        self.assertIn("2 with transparency (the colour stored beneath kept)", on["none"].describe(folder))
        self.assertRegex(on["none"].cache_path, r"_16px_3c_v3$")  # their caches, as they were
        self.assertEqual(len({image.cache_path for image in on.values()}), 4)
        with self.assertRaisesRegex(ValueError, r"^a background is one of white, black, gray, #rrggbb or none; "):
            image_files.decode_once(folder, 16, self.cache, background="#12345")

    def test_non_square_images_are_centre_cropped(self):
        digit = np.round((real_samples.digits_array(16)[7] + 1.0) * 127.5).astype(np.uint8)
        wide = np.pad(digit, ((0, 0), (5, 3), (0, 0)), constant_values=255)  # 16x24: 4 px cut each side
        folder = os.path.join(self.get_temp_dir(), "wide")
        os.makedirs(folder)
        tf.io.write_file(os.path.join(folder, "w.png"), tf.io.encode_png(wide))
        prepared = image_files.decode_once(folder, 16, self.cache)
        self.assertAllEqual(prepared.images[0], wide[:, 4:20])
        self.assertIsNone(prepared.labels)

    def test_resizing_is_antialiased(self):
        stripes = np.zeros((32, 32, 1), np.uint8)
        stripes[:, ::2] = 255
        folder = os.path.join(self.get_temp_dir(), "stripes")
        os.makedirs(folder)
        tf.io.write_file(os.path.join(folder, "s.png"), tf.io.encode_png(stripes))
        small = image_files.decode_once(folder, 8, self.cache).images[0]
        self.assertAllClose(
            small, np.full((8, 8, 1), 127.5), atol=12
        )  # averaged (bicubic rings a little), not 0 or 255

    def test_channels_from_the_data_or_as_asked(self):
        gray = os.path.join(self.get_temp_dir(), "gray")
        os.makedirs(gray)
        for i in range(2):
            tf.io.write_file(os.path.join(gray, f"{i}.png"), tf.io.encode_png(np.full((8, 8, 1), 10 * i, np.uint8)))
        self.assertEqual(image_files.decode_once(gray, 8, self.cache).images.shape, (2, 8, 8, 1))
        self.assertEqual(image_files.decode_once(gray, 8, self.cache, channels=3).images.shape, (2, 8, 8, 3))
        self.assertEqual(image_files.decode_once(self.root, 8, self.cache, channels=1).images.shape, (16, 8, 8, 1))

    def test_a_source_with_nothing_decodable_is_one_line(self):
        folder = os.path.join(self.get_temp_dir(), "broken")
        os.makedirs(folder)
        for name in ("a.png", "b.jpg"):
            with open(os.path.join(folder, name), "wb") as f:
                f.write(b"garbage")
        with self.assertRaisesRegex(
            image_files.ImageSourceError, r"none of the 2 image files in config.data=.* decodes \(the first: .*a.png\)"
        ):
            image_files.decode_once(folder, 8, self.cache)
        self.assertEqual(os.listdir(os.path.join(self.cache, "images")), [])  # no half-written cache

    def test_a_preparation_killed_midway_leaves_a_temporary_that_the_next_one_removes(self):
        script = (
            "import os, sys, time\n"
            "from tf_fusedprop.experiment import image_decoding, image_files\n"
            "decode = image_decoding.decode\n"
            "def slow(*args):\n"
            "    open(os.path.join(sys.argv[2], 'decoding'), 'w').close()\n"
            "    time.sleep(60)\n"
            "image_decoding.decode = slow  # where image_files looks it up\n"
            "image_files.decode_once(sys.argv[1], 16, sys.argv[2], workers=1)\n"
        )
        os.makedirs(self.cache)
        process = subprocess.Popen([sys.executable, "-c", script, self.root, self.cache], cwd=ROOT)
        self.addCleanup(process.kill)
        deadline = time.monotonic() + 60
        while not os.path.exists(os.path.join(self.cache, "decoding")):
            self.assertTrue(process.poll() is None and time.monotonic() < deadline, "it never started decoding")
            time.sleep(0.02)
        process.kill()  # SIGKILL, mid-preparation
        process.wait()
        (left,) = os.listdir(os.path.join(self.cache, "images"))
        self.assertTrue(left.startswith(f".tmp{process.pid}@"), left)
        prepared = image_files.decode_once(self.root, 16, self.cache)
        self.assertEqual(os.listdir(os.path.join(self.cache, "images")), [os.path.basename(prepared.cache_path)])

    def test_a_full_disk_is_one_line_and_leaves_no_temporary(self):
        disk = tu.small_disk(self, megabytes=1)
        tu.fill_disk(disk, keep=20_000)  # room for the directory, not for 16 images of 64x64x3
        with self.assertRaisesRegex(
            files.WriteError,
            r"^cannot write the image cache to .*/images/[0-9a-f]{16}_64px_autoc_v3_on_white: No space left on device \(it "
            r"needs [\d.]+ kB, [\d.]+ (kB|bytes) free there\)$",
        ):
            image_files.decode_once(self.root, 64, disk)
        self.assertEqual(os.listdir(os.path.join(disk, "images")), [])


class TfdsSourceTest(tu.TestCase):
    def test_a_tfds_dataset_is_prepared_with_its_class_labels(self):
        cache = self.get_temp_dir()
        with tfds.testing.mock_data(num_examples=10):
            prepared = image_files.decode_once("tfds:mnist", 16, cache)
            self.assertEqual(prepared.images.shape, (10, 16, 16, 1))
            self.assertEqual((prepared.labels.shape, prepared.class_names), ((10,), [str(d) for d in range(10)]))
            self.assertTrue(image_files.decode_once("tfds:mnist", 16, cache).reused)
            test_split = image_files.decode_once("tfds:mnist:test", 16, cache)
            self.assertNotEqual(test_split.cache_path, prepared.cache_path)  # the split is part of the key
        self.assertTrue(image_files.is_tfds("tfds:mnist") and not image_files.is_tfds("photos"))

    def test_unknown_unprepared_and_imageless_datasets_are_one_line(self):
        empty = self.get_temp_dir()
        for spec, data_dir, message in (
            ("tfds:no_such_dataset", None, r"TFDS knows no dataset 'no_such_dataset'"),
            ("tfds:mnist", empty, r"is not prepared in data_dir=.*\(TFDS looked in .*mnist.*\): run `tfds build mnist"),
            ("tfds:glue/cola", None, r"TFDS dataset 'glue/cola' has no image feature"),
        ):
            with self.assertRaisesRegex(image_files.ImageSourceError, message) as info:
                image_files.decode_once(spec, 16, self.get_temp_dir(), data_dir=data_dir)
            self.assertNotIn("\n", str(info.exception))


class Uint8PipelineTest(tu.TestCase):
    def test_scaled_shuffled_and_mirrored_reproducibly(self):
        images = np.arange(4 * 2 * 3, dtype=np.uint8).reshape(4, 2, 3, 1) * 10
        plain = np.concatenate([b.numpy() for b in real_samples.uint8_images(images, 2, seed=1, repeat=False)])
        self.assertAllClose(np.sort(plain.ravel()), np.sort(images.ravel() / 127.5 - 1.0), atol=1e-6)
        stream = lambda seed: np.concatenate(
            [b.numpy() for b in real_samples.uint8_images(images, 4, seed=seed, mirror=True).take(8)]
        )
        first = stream(3)
        self.assertAllEqual(first, stream(3))
        # A resumed run skips the batches already trained (train_lib): it sees the same flips.
        skipped = real_samples.uint8_images(images, 4, seed=3, mirror=True).skip(5).take(3)
        self.assertAllEqual(np.concatenate([b.numpy() for b in skipped]), first[20:32])
        as_float = images / 127.5 - 1.0
        flipped = [any(np.allclose(x, f[:, ::-1]) and not np.allclose(x, f) for f in as_float) for x in first]
        self.assertBetween(sum(flipped), 4, 28)  # about half of 32, reproducibly
        for budget in (real_samples.IN_MEMORY_BYTES, 10):  # held in memory, or read row by row from the array
            with mock.patch.object(real_samples, "IN_MEMORY_BYTES", budget):
                labelled = real_samples.uint8_images(images, 2, labels=np.arange(4, dtype=np.int32), repeat=False)
                seen = []
                for batch, labels in labelled:
                    for image, label in zip(batch.numpy(), labels.numpy()):
                        self.assertAllClose(image, as_float[label], atol=1e-6)
                        seen.append(label)
                self.assertCountEqual(seen, range(4))


if __name__ == "__main__":
    tf.test.main()


class OrientationTest(tu.TestCase):
    def test_a_phone_photo_stored_sideways_is_prepared_upright(self):
        upright = BLOCKS[:, :16]  # 16 x 16: no crop, so the two must agree pixel for pixel
        folder = os.path.join(self.get_temp_dir(), "photos")
        os.makedirs(folder)
        with open(os.path.join(folder, "portrait.jpg"), "wb") as f:
            f.write(exif_jpeg(np.ascontiguousarray(np.rot90(upright, 1)), 6))  # stored turned, tagged "turn it"
        tf.io.write_file(os.path.join(folder, "reference.png"), tf.io.encode_png(upright))
        prepared = image_files.decode_once(folder, 16, os.path.join(self.get_temp_dir(), "cache"))
        portrait, reference = prepared.images[0], prepared.images[1]
        self.assertLess(np.abs(portrait.astype(int) - reference.astype(int)).max(), 3)


class LargePhotoTest(tu.TestCase):
    """A photo much larger than the target decodes at a fraction of its size, on every core."""

    def smooth_photo(self, height, width, seed=0):
        coarse = np.random.default_rng(seed).uniform(0, 255, (1, 6, 8, 3)).astype(np.float32)
        return tf.cast(tf.image.resize(coarse, [height, width], method="bicubic"), tf.uint8)[0].numpy()

    def prepare(self, folder, size, **kwargs):
        cache = os.path.join(self.get_temp_dir(), "cache")
        return image_files.decode_once(folder, size, cache, **kwargs).images.astype(int)

    def test_a_large_tagged_jpeg_decodes_reduced_upright_and_close_to_the_full_decode(self):
        upright = self.smooth_photo(512, 384)  # a portrait, stored sideways with orientation 6
        folder = os.path.join(self.get_temp_dir(), "photos")
        os.makedirs(folder)
        with open(os.path.join(folder, "p.jpg"), "wb") as f:
            f.write(exif_jpeg(np.ascontiguousarray(np.rot90(upright, 1)), 6))
        with mock.patch.object(image_decoding.tf.io, "decode_jpeg", wraps=tf.io.decode_jpeg) as decode_jpeg:
            reduced = self.prepare(folder, 32)
        self.assertEqual(decode_jpeg.call_args.kwargs["ratio"], 8)  # 384 / 8 = 48 >= 32
        full = self.prepare(folder, 32, reduce_jpegs=False)
        png = os.path.join(self.get_temp_dir(), "png")
        os.makedirs(png)
        tf.io.write_file(os.path.join(png, "p.png"), tf.io.encode_png(upright))
        exact = self.prepare(png, 32)
        self.assertLess(np.abs(full - exact).max(), 6)  # JPEG's rounding only
        self.assertLess(np.abs(reduced - exact).mean(), 2.0)
        self.assertLess(np.abs(reduced - exact).max(), 12)

    def test_jpegs_under_twice_the_size_or_smaller_than_it_are_decoded_whole(self):
        folder = os.path.join(self.get_temp_dir(), "small")
        os.makedirs(folder)
        tf.io.write_file(os.path.join(folder, "s.jpg"), tf.io.encode_jpeg(self.smooth_photo(63, 80)))
        tf.io.write_file(os.path.join(folder, "t.jpg"), tf.io.encode_jpeg(self.smooth_photo(20, 24)))  # upsampled
        self.assertAllEqual(self.prepare(folder, 32), self.prepare(folder, 32, reduce_jpegs=False))

    def test_threads_keep_the_order_the_labels_and_the_skipped_files(self):
        root = os.path.join(self.get_temp_dir(), "images")
        tu.write_image_tree(root)
        one = image_files.decode_once(root, 8, os.path.join(self.get_temp_dir(), "a"), workers=1)
        three = image_files.decode_once(root, 8, os.path.join(self.get_temp_dir(), "b"), workers=3)
        self.assertAllEqual(three.images, one.images)
        self.assertAllEqual(three.labels, one.labels)
        self.assertEqual(three.skipped, one.skipped)
        self.assertLen(one.skipped, 1)


class UndecodedFormatsTest(tu.TestCase):
    def test_heic_and_tiff_are_named_as_skipped_not_left_out(self):
        folder = os.path.join(self.get_temp_dir(), "phone")
        os.makedirs(folder)
        tf.io.write_file(os.path.join(folder, "a.png"), tf.io.encode_png(np.zeros((8, 8, 3), np.uint8)))
        for name in ("IMG_0001.HEIC", "scan.tif"):
            with open(os.path.join(folder, name), "wb") as f:
                f.write(b"\x00\x00\x00\x18ftypheic" if name.endswith("HEIC") else b"II*\x00\x08\x00\x00\x00")
        prepared = image_files.decode_once(folder, 8, os.path.join(self.get_temp_dir(), "cache"))
        self.assertEqual(prepared.images.shape[0], 1)
        self.assertEqual(sorted(os.path.basename(p) for p in prepared.skipped), ["IMG_0001.HEIC", "scan.tif"])
        self.assertRegex(
            prepared.describe(folder),
            r"; skipped 2 of 3 files: .*IMG_0001.HEIC \(unsupported format: HEIC, convert it to PNG or JPEG\), "
            r".*scan.tif \(unsupported format: TIF, convert it to PNG or JPEG\), each with its reason in ",
        )
        only_heic = os.path.join(self.get_temp_dir(), "heic")
        os.makedirs(only_heic)
        shutil.copy(os.path.join(folder, "IMG_0001.HEIC"), only_heic)
        with self.assertRaisesRegex(
            image_files.ImageSourceError, r"none of the 1 image files .* PNG, JPEG, BMP, GIF and WebP"
        ):
            image_files.decode_once(only_heic, 8, os.path.join(self.get_temp_dir(), "cache"))

    def test_every_skipped_file_is_named_with_its_reason_counted_apart_and_decoders_say_nothing(self):
        folder = os.path.join(self.get_temp_dir(), "mixed")
        os.makedirs(folder)
        good = tf.io.encode_jpeg(np.full((32, 32, 3), 100, np.uint8)).numpy()
        for index in range(3):
            tf.io.write_file(os.path.join(folder, f"good{index}.jpg"), good)
        for index in range(4):  # a JPEG cut short: TensorFlow's decoder complains on its own
            with open(os.path.join(folder, f"cut{index}.jpg"), "wb") as f:
                f.write(good[:300])
        with open(os.path.join(folder, "notes.png"), "wb") as f:
            f.write(b"just text")
        script = (
            "import sys\n"
            "from tf_fusedprop.experiment import image_files\n"
            "prepared = image_files.decode_once(sys.argv[1], 16, sys.argv[2], log=print, workers=1)\n"
            "print('LINE', prepared.describe(sys.argv[1]))\n"
            "print('LIST', prepared.cache_path + '/skipped.txt')\n"
        )
        cache = os.path.join(self.get_temp_dir(), "cache")
        result = subprocess.run(
            [sys.executable, "-c", script, folder, cache], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        self.assertNotIn("JPEG", result.stderr)  # no "Invalid JPEG data" nor "Input file read error" lines
        self.assertNotIn("Input file", result.stderr)
        lines = tu.marked_lines(result.stdout)
        self.assertRegex(
            lines["LINE"],
            r"skipped 5 of 8 files: .*cut0.jpg \(corrupt or truncated: it does not decode\), .*cut1.jpg \(corrupt "
            r"or truncated: it does not decode\), .*cut2.jpg \(corrupt or truncated: it does not decode\) and 2 more, "
            r"each with its reason in .*skipped.txt;",
        )
        with open(lines["LIST"]) as f:
            listed = [line.rstrip("\n").split("\t") for line in f]
        self.assertEqual(
            [os.path.basename(path) for path, _ in listed], [f"cut{i}.jpg" for i in range(4)] + ["notes.png"]
        )
        self.assertEqual(listed[-1][1], "not an image file: no PNG, JPEG, GIF, BMP or WebP header")
        progress = [line for line in result.stdout.splitlines() if line.startswith("Preparing")]
        for line in progress:  # counted apart: never "8/8 images decoded" while 5 failed
            self.assertRegex(line, r"^Preparing .*: \d/8 files, \d decoded(, \d skipped)? \.\.\.$")

    def test_16_bit_cmyk_palette_and_gray_alpha_files_read_as_they_look(self):
        folder = os.path.join(self.get_temp_dir(), "odd")
        os.makedirs(folder)
        red = np.zeros((8, 8, 3), np.uint8)
        red[..., 0], red[..., 1] = 200, 50
        gray16 = np.full((8, 8, 1), 40_000, np.uint16)
        tf.io.write_file(os.path.join(folder, "a_16bit.png"), tf.io.encode_png(gray16))
        Image.fromarray(red).convert("CMYK").save(os.path.join(folder, "b_cmyk.jpg"), quality=100)
        Image.fromarray(red).convert("P").save(os.path.join(folder, "c_palette.png"))
        gray_alpha = np.dstack([np.full((8, 8), 77, np.uint8), np.full((8, 8), 255, np.uint8)])
        Image.fromarray(gray_alpha, mode="LA").save(os.path.join(folder, "d_gray_alpha.png"))
        images = image_files.decode_once(folder, 8, os.path.join(self.get_temp_dir(), "cache"), channels=3).images
        expected = [[156] * 3, [200, 50, 0], [204, 51, 0], [77] * 3]  # 40,000 / 257; the palette's nearest red
        self.assertLess(np.abs(images[:, 4, 4].astype(int) - np.array(expected)).max(), 3)
