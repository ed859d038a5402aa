"""Figure helpers and the peak-RSS probe."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from PIL import Image

from reference.harness.cost import peak_rss_of
from reference.harness.plots import bar_chart, curve_plot, save_grid


def test_save_grid_tiles_images_with_gutters(tmp_path: Path) -> None:
    x = torch.linspace(-1, 1, 12 * 16 * 16).reshape(12, 1, 16, 16)
    path = save_grid(x, tmp_path / "grid.png", nrow=5, scale=2)
    with Image.open(path) as image:
        # 5 columns x 3 rows of 16 px with 1 px gutters, upscaled 2x
        assert image.size == ((5 * 17 + 1) * 2, (3 * 17 + 1) * 2)
        assert image.mode == "L"
        assert image.getpixel((0, 0)) == 128  # gutter
    with pytest.raises(ValueError, match=r"expected \[N, 1, H, W\]"):
        save_grid(torch.zeros(2, 3, 4, 4), tmp_path / "bad.png")


def test_bar_chart_and_curves_write_pngs(tmp_path: Path) -> None:
    bars = bar_chart(
        ["DDIM 50", "cached", "DDIM 25"],
        [10.0, 6.0, 5.0],
        tmp_path / "bars.png",
        roles=["baseline", "technique", "control"],
        errors=[1.0, None, 0.5],
        ylabel="ms",
    )
    curves = curve_plot(
        [5, 10, 20], {"DDIM": [30.0, 12.0, 8.0]}, tmp_path / "c.png", hlines={"floor": 6.0}
    )
    for path in (bars, curves):
        with Image.open(path) as image:
            assert image.format == "PNG" and image.size[0] > 100


def test_peak_rss_of_a_child_process_sees_its_allocation() -> None:
    small = peak_rss_of("x = 0")
    big = peak_rss_of("x = bytearray(80_000_000); x[::4096] = b'1' * len(x[::4096])")
    assert big - small > 60_000_000
    with pytest.raises(RuntimeError, match="child process failed"):
        peak_rss_of("raise SystemExit(3)")
