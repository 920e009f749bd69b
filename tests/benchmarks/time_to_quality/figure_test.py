"""benchmarks/time_to_quality/figure.py: quality.png's curves (measured or modelled seconds)
and a line per stabilizer row."""

import os
from unittest import mock

import tensorflow as tf
from matplotlib.axes import Axes

from benchmarks.time_to_quality.figure import curve, figure
from tests import testing_utils as tu
from tests.benchmarks.time_to_quality.fixtures import plateau_records


class FigureTest(tu.TestCase):
    def test_the_plot_shows_modelled_seconds_where_every_form_has_its_seconds_per_update(self):
        records = plateau_records()
        alternating = [r for r in records if r["form"] == "alternating"]
        steps, seconds, _, _ = curve(alternating, "fid", 1.0, lambda step: 0.3 * step)
        self.assertAllClose(seconds, [150.0, 300.0, 450.0])
        self.assertAllClose(curve(alternating, "fid", 1.0)[1], [100.0, 200.0, 300.0])  # measured
        path = os.path.join(self.get_temp_dir(), "png")
        for seconds_per_update, label in (
            ({"alternating": 0.3, "mnist/fused": 0.24}, "modelled seconds (G updates x s per update)"),
            ({"alternating": 0.3}, "training seconds"),  # fused's unknown: both forms on measured seconds
        ):
            with mock.patch.object(Axes, "set_xlabel", autospec=True, side_effect=Axes.set_xlabel) as set_xlabel:
                figure(records, path, seconds_per_update)
            self.assertEqual([c.args[1] for c in set_xlabel.call_args_list], [label, "G updates"])
            with open(path, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_the_plot_draws_each_stabilizer_row_of_a_form_in_its_own_line(self):
        fused = [r for r in plateau_records() if r["form"] == "fused"]
        records = [{**r, "stabilizer": f"row{k}", "row": f"fused+row{k}"} for k in range(8) for r in fused]
        with mock.patch.object(Axes, "plot", autospec=True, side_effect=Axes.plot) as plot:
            figure(records, os.path.join(self.get_temp_dir(), "rows.png"))
        lines = {(c.kwargs["color"], c.kwargs["linestyle"], c.kwargs["marker"]) for c in plot.call_args_list}
        self.assertLen(lines, 8)  # one colour (fused's), eight rows: each its own style and marker


if __name__ == "__main__":
    tf.test.main()
