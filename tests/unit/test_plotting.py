"""rcakit.plotting: what a figure's PNG records for the browser test (its smallest text, flat bars)."""

from __future__ import annotations

import io

import matplotlib.pyplot as plt
import pytest
from PIL import Image

from rcakit import plotting


@pytest.mark.parametrize(
    ("heights", "horizontal", "flat"),
    [
        ([0.0, 0.0, 0.0], False, True),
        ([0.0, 0.02, 0.0], False, False),
        ([0.0, 0.0], True, True),
        ([0.0, 1.0], True, False),
    ],
)
def test_a_figure_is_flat_only_when_every_bar_has_zero_length(heights, horizontal, flat):
    fig, ax = plt.subplots()
    (ax.barh if horizontal else ax.bar)(range(len(heights)), heights)
    ax.scatter([0, 1], [0.5, 0.7])  # other marks do not make the bars visible
    assert plotting.bars_all_flat(fig) is flat
    plt.close(fig)


def test_a_figure_without_bars_is_not_flat_and_its_png_records_both_keys():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 0])
    assert not plotting.bars_all_flat(fig)
    fig.axes[0].bar([0, 1], [0.0, 0.0])
    data, _ = plotting.retina_png(fig)
    assert isinstance(data, bytes)
    with Image.open(io.BytesIO(data)) as png:
        assert png.info[plotting.FLAT_BARS_KEY] == "yes" and float(png.info[plotting.SMALLEST_TEXT_KEY]) > 0
    plt.close(fig)
