"""Small figure helpers (matplotlib's object API with the Agg canvas; no display needed).

* `save_grid` - a PNG grid of image samples (pixels in [-1, 1]), nearest-neighbour upscaled.
* `bar_chart` - one metric for baseline / technique / control rows, with IQR error bars.
* `curve_plot` - one or more y(x) curves (e.g. quality against NFE, latency against depth).

Figures of a result go next to its JSON (`reference.harness.results.output_dir`) and are
listed by file name in ``BenchmarkResult.figures``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch

ROLE_COLORS = {
    "baseline": "#4c72b0",
    "technique": "#dd8452",
    "control": "#8c8c8c",
    "reference": "#55a868",
}


def _figure(width: float, height: float):  # -> matplotlib.figure.Figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_grid(samples: torch.Tensor, path: str | Path, nrow: int = 10, scale: int = 4) -> Path:
    """Save ``samples`` ``[N, 1, H, W]`` in [-1, 1] as a grey PNG grid with ``nrow`` per row.

    A 1-pixel mid-grey gutter separates images; ``scale`` is the nearest-neighbour upscaling.
    Returns the path written.
    """
    from PIL import Image

    x = samples.detach().float().cpu().clamp(-1, 1)
    if x.dim() != 4 or x.shape[1] != 1:
        raise ValueError(f"save_grid: expected [N, 1, H, W], got {tuple(x.shape)}")
    n, _, h, w = x.shape
    ncol = min(nrow, n)
    nrows = (n + ncol - 1) // ncol
    canvas = np.full((nrows * (h + 1) + 1, ncol * (w + 1) + 1), 128, dtype=np.uint8)
    pixels = ((x[:, 0] + 1.0) * 127.5).round().to(torch.uint8).numpy()
    for i in range(n):
        r, c = divmod(i, ncol)
        canvas[1 + r * (h + 1) : 1 + r * (h + 1) + h, 1 + c * (w + 1) : 1 + c * (w + 1) + w] = (
            pixels[i]
        )
    image = Image.fromarray(canvas, mode="L")
    image = image.resize((image.width * scale, image.height * scale), Image.Resampling.NEAREST)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)
    return path


def bar_chart(
    names: Sequence[str],
    values: Sequence[float],
    path: str | Path,
    *,
    roles: Sequence[str] | None = None,
    errors: Sequence[float | None] | None = None,
    ylabel: str = "",
    title: str = "",
) -> Path:
    """Horizontal bars, coloured by role (baseline/technique/control/reference), with errors."""
    roles = roles or ["technique"] * len(names)
    err = [0.0 if e is None else e for e in errors] if errors else None
    fig = _figure(6.4, 0.45 * len(names) + 1.2)
    ax = fig.add_subplot()
    y = np.arange(len(names))
    ax.barh(y, values, xerr=err, color=[ROLE_COLORS.get(r, "#999999") for r in roles], capsize=3)
    ax.set_yticks(y, labels=list(names))
    ax.invert_yaxis()
    ax.set_xlabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def curve_plot(
    x: Sequence[float],
    series: Mapping[str, Sequence[float]],
    path: str | Path,
    *,
    xlabel: str = "",
    ylabel: str = "",
    title: str = "",
    logx: bool = False,
    logy: bool = False,
    hlines: Mapping[str, float] | None = None,
) -> Path:
    """Curves ``series[label]`` over ``x`` with markers; ``hlines`` adds labelled dashed levels."""
    fig = _figure(6.4, 4.0)
    ax = fig.add_subplot()
    for label, ys in series.items():
        ax.plot(list(x), list(ys), marker="o", label=label)
    for label, level in (hlines or {}).items():
        ax.axhline(level, linestyle="--", linewidth=1, color="#8c8c8c")
        ax.annotate(label, (ax.get_xlim()[0], level), fontsize=8, va="bottom")
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def zoo_sample_grid(name: str, zoo_dir: Path, guidance_scale: float = 2.0) -> Path:
    """DDIM-50 grid: rows = classes 0-9 (CFG ``guidance_scale``), last row unconditional."""
    from reference.zoo import decode_latents, latent_scheduler, load, teacher_scheduler

    from .sampling import make_noise, model_eps_fn, sample

    model = load(name, zoo_dir)
    latent = name == "latent_teacher"
    shape = (4, 4, 4) if latent else (1, 16, 16)
    labels = torch.arange(10).repeat_interleave(10)
    eps_fn = model_eps_fn(model)
    scheduler = latent_scheduler if latent else teacher_scheduler
    cond = sample(
        eps_fn,
        scheduler(),
        make_noise(100, 0, shape),
        labels=labels,
        guidance_scale=guidance_scale,
        clamp=not latent,
    )
    uncond = sample(eps_fn, scheduler(), make_noise(10, 1, shape), clamp=not latent)
    x = torch.cat([cond, uncond])
    if latent:
        x = decode_latents(load("vae", zoo_dir), x)
    return save_grid(x, zoo_dir / f"{name}_samples.png", nrow=10)
