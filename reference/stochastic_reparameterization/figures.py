"""The three figures of the benchmark: estimator variance, the mechanism, training curves."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from reference.harness.results import Row

from .studies import Context, LossStudy
from .training_runs import TrainingRun


def _figure(width: float, height: float, ncols: int = 1):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(1, ncols)


def mechanism_figure(ctx: Context, loss: LossStudy, path: Path) -> Path:
    """Left: per-t eps-loss of the teacher and the proposals; right: the weightings."""
    import numpy as np

    fig, (left, right) = _figure(10.0, 4.0, 2)
    t, per_example = loss.per_t
    bins = 50
    b = (t * bins // ctx.schedule.T).numpy()
    l64 = per_example.double().numpy()
    full = [i for i in range(bins) if (b == i).any()]
    centers = (np.array(full) + 0.5) * ctx.schedule.T / bins
    mean = np.array([l64[b == i].mean() for i in full])
    rms = np.array([np.sqrt((l64[b == i] ** 2).mean()) for i in full])
    left.plot(centers, mean, "o-", ms=3, label="E[l | t] (teacher eps-loss)")
    left.plot(centers, rms, "s--", ms=3, label="sqrt(E[l^2 | t])")
    left.set_yscale("log")
    left.set_xlabel("timestep t")
    left.set_ylabel("per-example eps-MSE")
    twin = left.twinx()
    steps = np.arange(ctx.schedule.T)
    twin.plot(steps, loss.importance.pmf.numpy() * ctx.schedule.T, color="#c44e52", lw=1,
              label="importance q(t) x T")  # fmt: skip
    twin.plot(steps, ctx.edm_q.pmf.numpy() * ctx.schedule.T, color="#55a868", lw=1,
              label="EDM log-normal p(t) x T")  # fmt: skip
    twin.set_ylabel("proposal density (uniform = 1)")
    lines = left.get_legend_handles_labels()
    more = twin.get_legend_handles_labels()
    left.legend(lines[0] + more[0], lines[1] + more[1], fontsize=7, loc="upper right")
    left.set_title("Where the loss and the proposals put their mass")
    tt = torch.arange(ctx.schedule.T)
    for name in ("eps", "v", "x0", "edm"):
        w = ctx.param(name).eps_error_weight(tt)
        if name == "edm":
            w = w * ctx.edm_q.pmf * ctx.schedule.T
        right.plot(steps, w.numpy(), label=name)
    right.set_yscale("log")
    right.set_ylim(1e-4, 1e6)
    right.set_xlabel("timestep t")
    right.set_ylabel("weight per unit of eps-error (uniform t)")
    right.set_title("Each parameterization reweights the same error")
    right.legend(fontsize=8)
    for ax in (left, right):
        ax.grid(alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def variance_figure(rows: Sequence[Row], path: Path) -> Path:
    """Loss and gradient variance reduction of every estimator (log scale; 2x line)."""
    import numpy as np
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator, ScalarFormatter

    fig, (left, right) = _figure(11.0, 0.42 * len(rows) + 1.8, 2)
    names = [r.id.removeprefix("var-") for r in rows]
    y = np.arange(len(rows))
    for ax, key, title in (
        (left, "loss_var_reduction", "Loss estimator\n(eps: zoo teacher; EDM: tiny EDM U-Net)"),
        (right, "grad_var_reduction", "Gradient estimator, trace of covariance\n(tiny U-Nets)"),
    ):
        vals = [float(r.values[key] or 1.0) for r in rows]
        colors = ["#4c72b0" if v >= 1 else "#c44e52" for v in vals]
        ax.barh(y, vals, color=colors)
        ax.set_xscale("log")
        ticks = [
            t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20) if min(vals) / 1.5 <= t <= max(vals) * 1.5
        ]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.axvline(1.0, color="black", lw=0.8)
        ax.axvline(2.0, color="#8c8c8c", ls="--", lw=1)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("Var(group baseline) / Var(estimator)")
        ax.grid(axis="x", alpha=0.3)
        ax.invert_yaxis()
    left.set_yticks(y, labels=names, fontsize=8)
    right.set_yticks(y, labels=[])
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def training_figure(runs: dict[str, TrainingRun], path: Path) -> Path:
    """Held-out eps-MSE and x0-MSE against examples seen: seed mean, min-max band."""
    fig, (left, right) = _figure(10.0, 4.0, 2)
    for key, r in runs.items():
        x = r.curves[0].examples
        for ax, field in ((left, "eps_mse"), (right, "x0_mse")):
            values = torch.tensor([getattr(c, field) for c in r.curves], dtype=torch.float64)
            (line,) = ax.plot(x, values.mean(0).tolist(), marker=".", label=key)
            if len(r.curves) > 1:
                ax.fill_between(x, values.min(0).values.tolist(), values.max(0).values.tolist(),
                                color=line.get_color(), alpha=0.15)  # fmt: skip
    for ax, what in ((left, "eps-MSE"), (right, "clipped x0-MSE")):
        ax.set_yscale("log")
        ax.set_xlabel("training examples seen")
        ax.set_ylabel(f"held-out {what} (uniform t, EMA weights)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path
