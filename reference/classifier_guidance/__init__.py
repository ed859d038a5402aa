"""Classifier guidance: steer an unconditional diffusion model with a noise-aware classifier.

Idea
----
Bayes' rule on noisy samples: ``grad log p(x_t | y) = grad log p(x_t) + grad log p(y | x_t)``.
The denoiser gives the first term (``grad log p(x_t) = -eps(x_t, t) / sqrt(1 - abar_t)``), a
classifier trained on noised images ``p_phi(y | x_t, t)`` the second. Dhariwal & Nichol 2021
(arXiv:2105.05233, Algorithm 2) fold both into a modified noise prediction for DDIM::

    eps_hat(x_t, t) = eps(x_t, t) - sqrt(1 - abar_t) * s * grad_x log p_phi(y | x_t, t)

with a *guidance scale* ``s``: ``s = 1`` samples ``p(x | y)`` in theory, ``s > 1`` sharpens
towards ``p(y | x)^s`` (more class-typical, less diverse). Here the unconditional model is the
zoo teacher fed the null class 10, and ``p_phi`` is the zoo's ``NoisyDigitsClassifier``.

Classifier-free guidance (Ho & Salimans 2022, arXiv:2207.12598) needs no classifier: one network
trained with label dropout gives both ``eps(x_t, t, y)`` and ``eps(x_t, t, null)``, and
``eps_uncond + w (eps_cond - eps_uncond)`` plays the same role (``w = 1``: plain conditional).
The zoo teacher was trained that way, so both methods run on the same weights.

Cost per step
-------------
* classifier guidance: one U-Net pass + one classifier forward **and backward** to ``x_t``;
* classifier-free guidance: two U-Net passes (batched as one call with twice the rows).
Which is cheaper depends on the classifier's size relative to the U-Net; the benchmark measures
both (latency per step, FLOPs counted by ``torch.utils.flop_counter``, backward included).

Pitfalls
--------
* The classifier must be trained on ``x_t`` at every noise level of the schedule; a clean
  classifier's gradients on noisy inputs are meaningless (adversarial-like directions).
* Gradients need ``torch.enable_grad()`` inside the (no-grad) sampling loop, and a classifier
  without batch statistics (GroupNorm, not BatchNorm in train mode), or samples interact.
* Accuracy measured with a classifier that guided the samples is circular: this module scores
  with the *clean* zoo classifier, a different network; large scales still exploit shared
  features, so FDD and diversity are reported beside accuracy.
* "Guidance lets fewer steps reach equal quality" is not a property of guidance: it changes
  *what* is sampled (sharper class-typical digits), not the ODE discretisation error; measure
  accuracy and FDD against NFE (the benchmark does).

Production: classifier guidance is ``guided_diffusion``'s ``cond_fn`` (Dhariwal & Nichol's
code); diffusers has no built-in classifier-guidance pipeline (community pipelines only), while
classifier-free guidance is the ``guidance_scale`` argument of every conditional pipeline.

Run ``python -m reference.classifier_guidance`` for a demonstration, ``--bench`` for the benchmark.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from torch.nn import functional as F

SLUG = "classifier-guidance"
MODULE = "reference.classifier_guidance"

EpsFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def log_prob_grad(
    classifier: torch.nn.Module, x_t: torch.Tensor, t: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """``grad_x log p_phi(y | x_t, t)`` per sample ``[N, ...]`` (autograd, no parameter grads)."""
    with torch.enable_grad():
        x = x_t.detach().requires_grad_(True)
        log_p = F.log_softmax(classifier(x, t), dim=-1)
        selected = log_p[torch.arange(len(y)), y].sum()  # samples are independent
        # backward(inputs=[x]) rather than autograd.grad: the same gradient, accumulated only
        # into x, and it also runs under torch's FlopCounterMode (which autograd.grad does not).
        torch.autograd.backward(selected, inputs=[x])
    return x.grad


def classifier_guided_eps_fn(
    eps_fn: EpsFn,
    classifier: torch.nn.Module,
    alphas_cumprod: torch.Tensor,
    scale: float,
    null_class: int = 10,
) -> EpsFn:
    """An :data:`EpsFn` for unconditional ``eps_fn`` guided towards the ``labels`` it is given.

    The denoiser always receives ``null_class``; the classifier receives the target labels:
    ``eps_hat = eps - sqrt(1 - abar_t) * scale * grad log p(y | x_t, t)``. ``scale = 0``
    reproduces the unguided sampler exactly (the gradient is still computed, then multiplied by
    0, so the cost stays that of guidance).
    """
    if scale < 0:
        raise ValueError(f"guidance scale must be >= 0, got {scale}")
    abar = alphas_cumprod.detach().to(torch.float64)

    def guided(x_t: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        null = torch.full_like(labels, null_class)
        eps = eps_fn(x_t, t, null)
        grad = log_prob_grad(classifier, x_t, t, labels)
        sigma = (1.0 - abar[t.long()]).sqrt().to(eps.dtype).view(-1, *([1] * (eps.dim() - 1)))
        return eps - sigma * (scale * grad)

    return guided


def finite_difference_grad(
    classifier: torch.nn.Module, x: torch.Tensor, t: torch.Tensor, y: torch.Tensor, h: float = 1e-6
) -> torch.Tensor:
    """Central differences of ``sum_i log p(y_i | x_i, t_i)`` w.r.t. every element of ``x``."""
    grad = torch.zeros_like(x)
    flat = grad.view(-1)
    with torch.no_grad():

        def f(v: torch.Tensor) -> float:
            log_p = F.log_softmax(classifier(v, t), dim=-1)
            return float(log_p[torch.arange(len(y)), y].sum())

        for i in range(x.numel()):
            e = torch.zeros_like(x).view(-1)
            e[i] = h
            e = e.view_as(x)
            flat[i] = (f(x + e) - f(x - e)) / (2 * h)
    return grad


# --------------------------------------------------------------------------- sampling


@dataclass(frozen=True)
class BenchConfig:
    """What the benchmark measures."""

    n: int = 200
    steps: int = 20
    cg_scales: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0)
    cfg_scales: tuple[float, ...] = (1.0, 1.5, 2.0, 3.0, 5.0)
    nfe_grid: tuple[int, ...] = (2, 5, 10, 20, 40)
    target_accuracy: float = 0.9
    latency_batch: int = 32
    repeats: int = 10
    threads: int = 2
    seed: int = 0

    def validate(self) -> None:
        if self.steps < 1 or any(k < 1 for k in self.nfe_grid):
            raise ValueError("steps must be >= 1")
        if any(s < 0 for s in self.cg_scales) or any(w < 0 for w in self.cfg_scales):
            raise ValueError("guidance scales must be >= 0")
        if 0.0 not in self.cg_scales:
            raise ValueError("the classifier-guidance scales must include 0 (the unguided row)")
        if self.n < 20:
            raise ValueError(f"need at least 20 samples (two per class), got {self.n}")
        if self.threads < 1:
            raise ValueError(f"threads must be >= 1, got {self.threads}")


QUICK = BenchConfig(
    n=20,
    steps=2,
    cg_scales=(0.0, 2.0),
    cfg_scales=(1.0, 2.0),
    nfe_grid=(1, 2),
    latency_batch=2,
    repeats=1,
)
DEMO = BenchConfig(
    n=60, steps=10, cg_scales=(0.0, 1.0, 4.0), cfg_scales=(1.0, 3.0), nfe_grid=(5, 10), repeats=3
)


class Models:
    """The zoo teacher, the noisy classifier and the schedule, loaded once (frozen)."""

    def __init__(self) -> None:
        from reference import zoo

        self.unet = zoo.load_teacher()
        self.classifier = zoo.load_noisy_classifier()
        for p in [*self.unet.parameters(), *self.classifier.parameters()]:
            p.requires_grad_(False)
        self.alphas_cumprod = zoo.teacher_scheduler().alphas_cumprod

    def sample(
        self, method: str, scale: float, noise: torch.Tensor, steps: int, labels: torch.Tensor
    ) -> torch.Tensor:
        """``method``: ``"cg"`` (classifier guidance at ``scale``), ``"cfg"`` (classifier-free
        guidance at ``scale``, 1 = conditional) or ``"uncond"`` (null class)."""
        from reference import zoo
        from reference.harness import model_eps_fn, sample

        eps = model_eps_fn(self.unet)
        sched = zoo.teacher_scheduler()
        if method == "cg":
            guided = classifier_guided_eps_fn(eps, self.classifier, self.alphas_cumprod, scale)
            return sample(guided, sched, noise, steps=steps, labels=labels)
        if method == "cfg":
            return sample(eps, sched, noise, steps=steps, labels=labels, guidance_scale=scale)
        if method == "uncond":
            return sample(eps, sched, noise, steps=steps)
        raise ValueError(f"unknown method {method!r}")

    def step_fns(self, batch: int, seed: int) -> dict[str, Callable[[], torch.Tensor]]:
        """One denoising evaluation of each method at ``t = 500`` on ``batch`` samples."""
        from reference.harness import class_labels, guided_eps, make_noise, model_eps_fn

        x = make_noise(batch, seed)
        t = torch.full((batch,), 500, dtype=torch.long)
        y = class_labels(batch)
        eps = model_eps_fn(self.unet)
        cg = classifier_guided_eps_fn(eps, self.classifier, self.alphas_cumprod, 2.0)
        return {
            "uncond": lambda: eps(x, t, torch.full_like(y, 10)),
            "cg": lambda: cg(x, t, y),
            "cfg": lambda: guided_eps(eps, x, t, y, 2.0),
        }


def first_reaching(curve: dict[int, float], target: float) -> int | None:
    """Smallest NFE whose accuracy is >= ``target`` (``None`` if none)."""
    hits = [k for k, acc in sorted(curve.items()) if acc >= target]
    return hits[0] if hits else None


def measure(cfg: BenchConfig, progress: bool = True) -> dict[str, Any]:
    """Quality against scale and NFE, and the cost of one step, for CG, CFG and unguided."""
    from tqdm.auto import tqdm

    from reference.harness import (
        class_accuracy,
        class_labels,
        compare_latency,
        count_flops,
        frechet_digits_distance,
        make_noise,
        within_class_diversity,
    )

    torch.set_num_threads(cfg.threads)
    models = Models()
    noise, labels = make_noise(cfg.n, cfg.seed), class_labels(cfg.n)

    def quality(x: torch.Tensor, method: str, scale: float) -> dict[str, float]:
        targeted = method != "uncond"  # accuracy against the target labels (chance at s = 0)
        steered = targeted and not (method == "cg" and scale == 0.0)
        return {
            "accuracy": class_accuracy(x, labels) if targeted else None,
            "fd_digits": frechet_digits_distance(x),
            # samples that ignore their targets are grouped by predicted class, as unguided ones
            "diversity": within_class_diversity(x, labels if steered else None),
        }

    jobs = [("cg", s, cfg.steps) for s in cfg.cg_scales]
    jobs += [("cfg", w, cfg.steps) for w in cfg.cfg_scales]
    jobs += [("uncond", 0.0, cfg.steps)]
    results: dict[tuple[str, float, int], dict[str, float]] = {}
    samples: dict[tuple[str, float, int], torch.Tensor] = {}
    bar = tqdm(total=len(jobs), desc="guidance scales", disable=not progress)
    for method, scale, steps in jobs:
        x = models.sample(method, scale, noise, steps, labels)
        results[(method, scale, steps)] = quality(x, method, scale)
        samples[(method, scale, steps)] = x
        bar.update()
    bar.close()
    cg_head = pick_scale(results, "cg", cfg.cg_scales, cfg.steps, cfg.target_accuracy)
    cfg_head = pick_scale(results, "cfg", cfg.cfg_scales, cfg.steps, cfg.target_accuracy)
    nfe_jobs = [
        (m, s, k)
        for k in cfg.nfe_grid
        for m, s in (("cg", cg_head), ("cfg", cfg_head), ("cfg", 1.0))
        if (m, s, k) not in results
    ]
    for method, scale, steps in tqdm(nfe_jobs, desc="NFE sweep", disable=not progress):
        x = models.sample(method, scale, noise, steps, labels)
        results[(method, scale, steps)] = quality(x, method, scale)
    fns = models.step_fns(cfg.latency_batch, cfg.seed + 1)
    with torch.no_grad():
        flops = {k: count_flops(f) / cfg.latency_batch for k, f in fns.items()}
    warmup = 2 if cfg.repeats > 1 else 0
    lat = compare_latency(fns, repeats=cfg.repeats, warmup=warmup, threads=cfg.threads)
    return {
        "results": results,
        "samples": samples,
        "cg_scale": cg_head,
        "cfg_scale": cfg_head,
        "flops": flops,
        "lat": lat,
    }


def pick_scale(
    results: dict[tuple[str, float, int], dict[str, float]],
    method: str,
    scales: tuple[float, ...],
    steps: int,
    target: float,
) -> float:
    """The smallest guiding scale whose accuracy reaches ``target``, else the most accurate.

    Only scales that guide are candidates (``s > 0`` for classifier guidance, ``w > 1`` for
    classifier-free guidance); ties in accuracy go to the larger scale.
    """
    neutral = 0.0 if method == "cg" else 1.0
    candidates = sorted(s for s in scales if s > neutral) or sorted(scales)

    def acc(s: float) -> float:
        return results[(method, s, steps)]["accuracy"] or 0.0

    ok = [s for s in candidates if acc(s) >= target]
    return ok[0] if ok else max(reversed(candidates), key=acc)


# --------------------------------------------------------------------------- benchmark


def _figure(m: dict[str, Any], cfg: BenchConfig, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    res = m["results"]
    fig = Figure(figsize=(11, 4.0), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax_acc, ax_fd, ax_nfe = fig.subplots(1, 3)
    for method, scales, label in (
        ("cg", cfg.cg_scales, "classifier guidance (s)"),
        ("cfg", cfg.cfg_scales, "classifier-free (w)"),
    ):
        ax_acc.plot(
            scales, [res[(method, s, cfg.steps)]["accuracy"] for s in scales], "o-", label=label
        )
        ax_fd.plot(
            scales, [res[(method, s, cfg.steps)]["fd_digits"] for s in scales], "o-", label=label
        )
    ax_fd.axhline(
        res[("uncond", 0.0, cfg.steps)]["fd_digits"], ls="--", c="#8c8c8c", label="unguided"
    )
    ax_acc.axhline(cfg.target_accuracy, ls="--", c="#8c8c8c")
    for ax, ylabel in ((ax_acc, "class accuracy (clean classifier)"), (ax_fd, "FDD")):
        ax.set_xlabel("guidance scale")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for method, scale, label in (
        ("cg", m["cg_scale"], f"classifier guidance s={m['cg_scale']:g}"),
        ("cfg", m["cfg_scale"], f"classifier-free w={m['cfg_scale']:g}"),
        ("cfg", 1.0, "conditional (w=1)"),
    ):
        ks = sorted({k for (mm, s, k) in res if mm == method and s == scale} & set(cfg.nfe_grid))
        ax_nfe.plot(ks, [res[(method, scale, k)]["accuracy"] for k in ks], "o-", label=label)
    ax_nfe.axhline(cfg.target_accuracy, ls="--", c="#8c8c8c")
    ax_nfe.set_xscale("log")
    ax_nfe.set_xlabel("NFE (DDIM steps)")
    ax_nfe.set_ylabel("class accuracy")
    ax_nfe.grid(alpha=0.3)
    ax_nfe.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def benchmark(quick: bool = False, cfg: BenchConfig | None = None, progress: bool = True) -> Any:
    """Classifier vs classifier-free guidance on the zoo teacher; a ``BenchmarkResult``."""
    from reference.harness import (
        BenchmarkResult,
        Headline,
        MetricSpec,
        Row,
        aim,
        fdd_floor,
        metrics,
        output_dir,
        provenance,
        real_diversity,
        save_grid,
    )

    cfg = cfg or (QUICK if quick else BenchConfig())
    cfg.validate()
    m = measure(cfg, progress)
    res, lat, flops = m["results"], m["lat"], m["flops"]
    s_cg, s_cfg = m["cg_scale"], m["cfg_scale"]
    uncond = res[("uncond", 0.0, cfg.steps)]
    cost = {
        "uncond": {"step_ms": lat.median_ms("uncond"), "gflops": flops["uncond"] / 1e9},
        "cg": {"step_ms": lat.median_ms("cg"), "gflops": flops["cg"] / 1e9},
        "cfg": {"step_ms": lat.median_ms("cfg"), "gflops": flops["cfg"] / 1e9},
    }
    spread = {k: {"step_ms": lat.iqr_ms(k)} for k in cost}

    def row(name: str, role: str, key: tuple[str, float, int], kind: str | None) -> Row:
        values = {"nfe": key[2], **res[key]}
        if kind is not None:
            values |= cost[kind]
        return Row(name, role, values, spread.get(kind, {}) if kind else {})  # type: ignore[arg-type]

    k = cfg.steps
    rows = [row(f"Unguided (null class), DDIM {k}", "baseline", ("uncond", 0.0, k), "uncond")]
    for s in cfg.cg_scales:
        head = s == s_cg
        rows.append(
            row(f"Classifier guidance s={s:g}", "technique", ("cg", s, k), "cg" if head else None)
        )
    for w in cfg.cfg_scales:
        name = "Conditional (CFG w=1)" if w == 1.0 else f"Classifier-free guidance w={w:g}"
        role = "reference" if w == 1.0 else "control"
        rows.append(row(name, role, ("cfg", w, k), "cfg" if w == s_cfg else None))
    acc_cg, fd_cg = res[("cg", s_cg, k)]["accuracy"], res[("cg", s_cg, k)]["fd_digits"]
    q_ratio = fd_cg / uncond["fd_digits"]
    curves = {
        name: {
            kk: res[(mm, ss, kk)]["accuracy"]
            for (mm, ss, kk) in res
            if (mm, ss) == (method, scale) and kk in cfg.nfe_grid
        }
        for name, method, scale in (("cg", "cg", s_cg), ("cfg", "cfg", s_cfg), ("cond", "cfg", 1.0))
    }
    reach = {name: first_reaching(c, cfg.target_accuracy) for name, c in curves.items()}

    def fmt_reach(v: int | None) -> str:
        return str(v) if v is not None else f"> {max(cfg.nfe_grid)}"

    out = output_dir(quick)
    grid = torch.cat(
        [
            m["samples"][key][:10]
            for key in (("uncond", 0.0, k), ("cg", s_cg, k), ("cfg", s_cfg, k), ("cfg", 1.0, k))
        ]
    )
    save_grid(grid, out / f"{SLUG}-samples.png")
    figures = [_figure(m, cfg, out / f"{SLUG}.png").name, f"{SLUG}-samples.png"]
    notes = [
        f"Zoo teacher U-Net, DDIM {k} steps, {cfg.n} samples (targets 0-9 balanced), the same "
        "noise for every row. Accuracy: the clean zoo classifier (not the noisy classifier that "
        f"guides). FDD floor at n={cfg.n}: {fdd_floor(cfg.n):.2f}; within-class diversity of "
        f"real test digits: {real_diversity():.2f}.",
        f"Headline scales (the smallest swept scale reaching {cfg.target_accuracy:.0%} accuracy "
        f"at {k} steps, else the most accurate one): classifier guidance s={s_cg:g} "
        f"({acc_cg:.0%}), classifier-free w={s_cfg:g} "
        f"({res[('cfg', s_cfg, k)]['accuracy']:.0%}).",
        f"Cost of one denoising step at batch {cfg.latency_batch} (median of {cfg.repeats} "
        f"interleaved rounds, {cfg.threads} threads): unguided "
        f"{cost['uncond']['step_ms']:.1f} ms, classifier guidance (U-Net + classifier forward "
        f"and backward) {cost['cg']['step_ms']:.1f} ms, classifier-free (U-Net on 2x the rows) "
        f"{cost['cfg']['step_ms']:.1f} ms; FLOPs per sample: "
        f"{cost['uncond']['gflops'] * 1e3:.1f} / {cost['cg']['gflops'] * 1e3:.1f} / "
        f"{cost['cfg']['gflops'] * 1e3:.1f} MFLOP (matmul/conv, backward included).",
        f"NFE needed to reach {cfg.target_accuracy:.0%} class accuracy (DDIM steps "
        f"{', '.join(map(str, cfg.nfe_grid))}): classifier guidance s={s_cg:g}: "
        f"{fmt_reach(reach['cg'])}; classifier-free w={s_cfg:g}: {fmt_reach(reach['cfg'])}; "
        f"conditional model without guidance: {fmt_reach(reach['cond'])}.",
    ]
    aims = [
        aim(f"class accuracy >= 90% with classifier guidance (s={s_cg:g})", acc_cg, 0.9, ">="),
        aim(f"FDD within 1.5x of unguided (s={s_cg:g})", q_ratio, 1.5, "<="),
    ]
    if not aims[0].met:
        notes.append(f"Accuracy aim not met: {acc_cg:.1%} at the most accurate swept scale.")
    if not aims[1].met:
        notes.append(f"Quality aim not met: FDD {q_ratio:.2f}x the unguided FDD at s={s_cg:g}.")
    return BenchmarkResult(
        slug=SLUG,
        module=MODULE,
        title="Classifier guidance of the unconditional zoo teacher with the noise-aware "
        "classifier, against classifier-free guidance on the same weights",
        quick=quick,
        settings={
            "n": cfg.n,
            "steps": k,
            "cg_scales": list(cfg.cg_scales),
            "cfg_scales": list(cfg.cfg_scales),
            "nfe_grid": list(cfg.nfe_grid),
            "target_accuracy": cfg.target_accuracy,
            "latency_batch": cfg.latency_batch,
            "repeats": cfg.repeats,
            "threads": cfg.threads,
            "accuracy_vs_nfe": {
                name: {str(kk): round(v, 4) for kk, v in sorted(c.items())}
                for name, c in curves.items()
            },
        },
        metrics=metrics(
            "accuracy",
            "fd_digits",
            "diversity",
            "nfe",
            step_ms=MetricSpec("Latency per denoising step", "ms", "lower"),
            gflops=MetricSpec("Compute per sample and step", "GFLOP", "lower"),
        ),
        rows=rows,
        headline=Headline(
            speedup=cost["uncond"]["step_ms"] / cost["cg"]["step_ms"],
            speedup_limit=None,
            quality_ratio=q_ratio,
            quality_metric="fd_digits",
        ),
        aims=aims,
        notes=notes,
        figures=figures,
        provenance=provenance([__file__]),
    )


# --------------------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m reference.classifier_guidance",
        description="Guide the unconditional zoo teacher with the noise-aware classifier; compare "
        "with classifier-free guidance (accuracy, FDD, diversity, cost per step).",
    )
    p.add_argument(
        "--scale",
        type=float,
        nargs="+",
        default=None,
        help="classifier-guidance scales (0 is always added)",
    )
    p.add_argument("--cfg-scale", type=float, nargs="+", default=None, help="CFG scales")
    p.add_argument("--steps", type=int, default=None, help="DDIM steps (demo: 10)")
    p.add_argument("--samples", type=int, default=None, help="samples (demo: 60)")
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    p.add_argument("--out", type=Path, default=Path("artifacts") / SLUG, help="demo output dir")
    p.add_argument("--bench", action="store_true", help="run the benchmark, write the result")
    p.add_argument("--quick", action="store_true", help="with --bench: the small test setup")
    return p


def _config(args: argparse.Namespace) -> BenchConfig:
    base = (QUICK if args.quick else BenchConfig()) if args.bench else DEMO
    steps = args.steps if args.steps is not None else base.steps
    cfg = replace(
        base,
        cg_scales=tuple(sorted({0.0, *args.scale})) if args.scale else base.cg_scales,
        cfg_scales=tuple(args.cfg_scale) if args.cfg_scale else base.cfg_scales,
        steps=steps,
        nfe_grid=tuple(sorted({*base.nfe_grid, steps})) if steps >= 1 else base.nfe_grid,
        n=args.samples if args.samples is not None else base.n,
        threads=args.threads,
    )
    cfg.validate()
    return cfg


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see ``--help``)."""
    from reference.zoo import ZooError

    args = _parser().parse_args(argv)
    try:
        cfg = _config(args)
        torch.set_num_threads(cfg.threads)
        if args.bench:
            from reference.harness import write_result

            result = benchmark(quick=args.quick, cfg=cfg)
            path = write_result(result)
            for a in result.aims:
                print(f"[{'met' if a.met else 'NOT met'}] {a.text}: {a.measured:.3g}")
            print(f"wrote {path}")
            return 0
        m = measure(cfg)
        print(f"{'configuration':34} {'acc':>6} {'FDD':>7} {'div':>6}")
        for (method, scale, steps), q in sorted(m["results"].items()):
            acc = "-" if q["accuracy"] is None else f"{q['accuracy']:.2f}"
            print(
                f"{method} scale={scale:<5g} steps={steps:<4d}{'':10} {acc:>6} "
                f"{q['fd_digits']:7.2f} {q['diversity']:6.2f}"
            )
        lat = m["lat"]
        print("ms per step: " + ", ".join(f"{k} {lat.median_ms(k):.1f}" for k in lat.stats))
        print(f"figure: {_figure(m, cfg, args.out / f'{SLUG}.png')}")
        return 0
    except (ValueError, ZooError) as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    raise SystemExit(main())
