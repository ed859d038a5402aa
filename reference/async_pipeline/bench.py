"""Benchmark and demo of [`reference.async_pipeline`][reference.async_pipeline] (the technique
contract of `reference.harness.entry`: it declares a comparison, the harness measures).

Rows, for every batch size ``b`` of the sweep, every one solving the same clipped ODE
(`reference.harness.ode`, DDIM on the trailing grid of ``steps`` steps) from the same noise:

* ``b{b}-single``: one process with 2 threads (baseline of the batch);
* ``b{b}-sync``: the 2-stage pipeline, stage 2 waiting for stage 1 at every step (control);
* ``b{b}-async``: AsyncDiff, stage 2 decoding the one-step-stale hand-off (technique);
* ``b{b}-single-x2``: two requests one after the other in one process (baseline of the stream);
* ``b{b}-stream``: the two requests pipelined through the stages (technique, throughput);
* ``real``: held-out real digits at the quality sample size (reference).

Each technique and control is timed against its own pair (``Variant.against``): ``b{b}-sync``
and ``b{b}-async`` against ``b{b}-single``, ``b{b}-stream`` against ``b{b}-single-x2``. All 15
timed rows are timed interleaved in one comparison, their raw rounds kept.

AsyncDiff is a training-free approximation (stage 2 sees features one step old), so its primary
quality figure is the fidelity ``rms_to_solution``: the per-sample RMS distance to the converged
solution of the same noise (DPM-Solver++(2M), `reference.harness.solutions`), with FDD, KID,
accuracy and diversity against the held-out reference half beside it. The two rows of the largest
batch, ``b{B}-single`` and ``b{B}-async``, also sample ``n_quality`` images per seed from the same
noise (paired seeds); the headline is ``b{B}-async`` with its fidelity ratio and the limit
estimate (1) of the same comparison.

Math
====
With stage times ``s1, s2`` at 1 thread (how the stage processes run), the full forward ``T2``
at the process's 2 threads, ``S`` steps of which ``w`` are synchronous:

    limit = S T2 / (w (s1 + s2) + (S - w) max(s1, s2))                              (1)
    throughput = requests · b / (latency_ms / 1000)                                 (2)

The quality aim (3): by the triangle inequality ``‖x_async − x*‖ ≤ ‖x_async − x_single‖ +
‖x_single − x*‖``, so AsyncDiff's distance to the solution stays within ``QUALITY_AIM = 2`` times
the single process's whenever the error staleness adds is no larger than DDIM's own
discretisation error at the same steps.

Sources: AsyncDiff, Chen et al. 2024 (arXiv:2406.06911); DDIM, Song et al. 2021
(arXiv:2010.02502); DPM-Solver++, Lu et al. 2022 (arXiv:2211.01095), the solution; pipelined
micro-batches, GPipe, Huang et al. 2019 (arXiv:1811.06965).

The benchmark spawns its two stage processes itself
([`StagePool`][reference.async_pipeline.runtime.StagePool]) and is refused under ``torchrun``
(the command line refuses ``--bench`` under a launcher). The demo runs either way: under
``torchrun`` (``RANK`` and ``WORLD_SIZE`` set) the two launched processes are the stages
([`launch`][reference.async_pipeline.launch]), rank 0 prints and writes
``async-pipeline-torchrun.{safetensors,json}`` into ``--out``, and ``--threads`` is the thread count
of each rank:

    torchrun --standalone --nproc-per-node=2 -m reference.async_pipeline --quick --threads 1

Pitfalls
========
* ``warmup`` is AsyncDiff's number of synchronous steps, not a timing warm-up (that is
  `TIMING_WARMUP`).
* The quality rows sample ``n_quality`` images per seed (140, the real row's size), not the
  row's latency batch; their ``batch`` names the latency batch.
* A baseline is timed against itself (speedup 1): against the first baseline, ``b64-single``
  would show a meaningless "speedup" across batch sizes.
* The stage processes live as long as the comparison (`measured`): its samplers and timed calls
  send jobs to them, so the pool must not close before `measure_comparison` returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reference.harness import sizes
from reference.harness.builders import quick
from reference.harness.compare import (
    FIDELITY,
    Comparison,
    HeadlineSpec,
    Outcome,
    QualityAim,
    SpeedupAim,
    Variant,
)
from reference.harness.compare import measure as measure_comparison
from reference.harness.declared import SAMPLED_COLUMNS, higher, sampled_outcome
from reference.harness.entry import integer, integers
from reference.harness.results import Figure, metrics

from .pipeline import Pipeline, pipeline

CONTRACT = 2
SLUG = "async-pipeline"
SPEED_AIM = 1.4
QUALITY_AIM = 2.0
"""(3): AsyncDiff's distance to the solution at most twice the single process's."""
TIMING_WARMUP = 1
KINDS: dict[str, tuple[str, str, str]] = {
    "single": ("single-process", "baseline", "single"),
    "sync": ("sync-pipeline", "control", "single"),
    "async": ("asyncdiff", "technique", "single"),
    "single-x2": ("sequential-requests", "baseline", "single-x2"),
    "stream": ("stream-pipeline", "technique", "single-x2"),
}
"""Row kind -> (configuration method, role, the kind of its batch it is timed against; a baseline
against itself, so that its speedup is 1 and not a ratio across batch sizes)."""


@dataclass(frozen=True)
class Config(sizes.Scored):
    """The quality sample and seeds (`sizes`), batch sizes of the sweep, DDIM steps, AsyncDiff's
    synchronous warm-up steps, timing rounds, and the solution's solver steps."""

    batches: tuple[int, ...] = (1, 8, 64)
    steps: int = 20
    warmup: int = 2
    repeats: int = 15
    solution_steps: int = sizes.SOLUTION_STEPS

    def validate(self) -> None:
        super().validate()
        if not 0 <= self.warmup < self.steps:
            raise ValueError(
                f"--warmup must be in 0..steps-1 ({self.steps - 1}), got {self.warmup}"
            )
        from reference.harness.machine import launched_rank

        launched = launched_rank()  # torchrun: one process per stage
        if launched is not None and launched[1] != 2:
            from glossary.i18n import ui_lang_from_env
            from glossary.resulttext import ResultText

            text = ResultText(SLUG, ui_lang_from_env())
            raise ValueError(text.message("error.world-size", {"world": launched[1]}))


FULL = Config()
QUICK = quick(Config, batches=(2,), steps=3, warmup=1, repeats=2, solution_steps=8)
DEMO = replace(QUICK, batches=(1, 16), steps=10, warmup=2, solution_steps=50)
OPTIONS = (
    integers("batches", low=1, high=256),
    integer("steps", low=2, high=1000),
    integer("warmup", low=0, high=999),
    integer("repeats", low=1, high=200),
    *sizes.SCORED_OPTIONS,
    integer("solution_steps", low=2, high=1000),
)


def _kept(p: Pipeline, key: str, run: Callable[[], Any]) -> Callable[[], Any]:
    def call() -> Any:
        p.kept[key] = out = run()
        return out

    return call


def _timed(p: Pipeline, cfg: Config, n: int) -> dict[str, Callable[[], Any]]:
    """One latency batch of every kind at batch ``n``, from the noise of `sizes.LATENCY_SEED`."""
    from .runtime import Job, single_process

    sync = Job(n, cfg.steps, mode="sync", seed=sizes.LATENCY_SEED)
    asyn = Job(n, cfg.steps, mode="async", warmup=cfg.warmup, seed=sizes.LATENCY_SEED)
    stream = Job(n, cfg.steps, mode="stream", requests=2, seed=sizes.LATENCY_SEED)
    return {
        "single": _kept(p, f"b{n}-single", lambda: single_process(p.unet, sync)),
        "sync": _kept(p, f"b{n}-sync", lambda: p.pool.run(sync).samples),
        "async": lambda: p.pool.run(asyn),
        "single-x2": lambda: single_process(p.unet, stream),
        "stream": lambda: p.pool.run(stream),
    }


def _sampled(p: Pipeline, cfg: Config) -> dict[str, Callable[[int], Any]]:
    """The single process and AsyncDiff from the noise and labels of each quality seed."""
    from .runtime import Job, single_process

    def job(mode: str, seed: int) -> Job:
        return Job(cfg.n_quality, cfg.steps, mode=mode, warmup=cfg.warmup, seed=seed)

    return {
        "single": lambda seed: single_process(p.unet, job("sync", seed))[0],
        "async": lambda seed: p.pool.run(job("async", seed)).samples[0],
    }


def row_config(kind: str, n: int, cfg: Config) -> dict[str, Any]:
    """The language-neutral configuration of a row."""
    config: dict[str, Any] = {"method": KINDS[kind][0], "batch": n}
    config |= {"warmup": cfg.warmup} if kind == "async" else {}
    return config | ({"requests": 2} if kind in ("single-x2", "stream") else {})


def variants(p: Pipeline, cfg: Config) -> tuple[Variant, ...]:
    """Five timed rows per batch; the largest batch's single process and AsyncDiff sample."""
    big, sampled = max(cfg.batches), _sampled(p, cfg)
    out = []
    for n in cfg.batches:
        for kind, run in _timed(p, cfg, n).items():
            _, role, pair = KINDS[kind]
            out.append(
                Variant(
                    f"b{n}-{kind}",
                    row_config(kind, n, cfg),
                    role,  # type: ignore[arg-type]
                    sample=sampled.get(kind) if n == big else None,
                    timed=run,
                    against=f"b{n}-{pair}",
                )
            )
    return tuple(out)


def solution_of(p: Pipeline, cfg: Config) -> Callable[[int], Any]:
    """The converged solution of each quality seed's noise and labels (cached by content)."""
    from reference.harness.solutions import solution

    from .runtime import Job, job_noise

    def one(seed: int) -> Any:
        noise, labels = job_noise(Job(cfg.n_quality, cfg.steps, seed=seed))
        return solution(p.unet, noise, labels=labels, steps=cfg.solution_steps)

    return one


def comparison(p: Pipeline, cfg: Config) -> Comparison:
    """The sweep and the paired quality seeds; AsyncDiff at the largest batch is the headline."""
    from reference.harness.scores import held_out_score

    batch = max(cfg.batches)
    head, big = f"b{batch}-async", f"b{batch}"
    return Comparison(
        variants=variants(p, cfg),
        metrics=metrics(*SAMPLED_COLUMNS, **higher("throughput", unit="images_per_s")),
        score=held_out_score(cfg.n_quality),
        seeds=cfg.seeds,
        aims=(
            SpeedupAim("speedup", head, f"{big}-single", ">=", SPEED_AIM, {"batch": batch}),
            QualityAim("quality", head, f"{big}-single", FIDELITY, "<=", QUALITY_AIM),  # (3)
            SpeedupAim("beats-sync", head, f"{big}-sync", ">", 1.0, {"batch": batch}),
        ),
        # (1) leaves out the hand-off, the DDIM step and Python: an estimate, not a bound
        headline=HeadlineSpec(head, FIDELITY, p.limit["limit"], "estimate"),
        repeats=cfg.repeats,
        warmup=TIMING_WARMUP,
        solution=solution_of(p, cfg),
    )


def measured(cfg: Config) -> tuple[Pipeline, Any]:
    """The comparison measured with the stage processes alive, and the throughputs added."""
    from .runtime import StagePool

    p = pipeline(cfg.batches, cfg.steps, cfg.warmup)
    with StagePool(p.split) as pool:
        p.pool = pool
        m = measure_comparison(comparison(p, cfg))
    from .report import throughputs

    throughputs(m.rows)
    return p, m


def measure(cfg: Config, staging: Path) -> Outcome:
    """Time the sweep, sample the paired quality seeds, write the speedup figure."""

    from .report import figure, notes

    p, m = measured(cfg)
    figures = [Figure(f"{SLUG}.png", "speedup-vs-batch")]
    figure(m.rows, cfg, p.limit["limit"], staging / figures[0].file)
    return sampled_outcome(
        m,
        cfg,
        notes=notes(cfg, p, m),
        figures=figures,
        split=p.split,
        backend="gloo",
        threads_per_stage=1,
    )


def demo(cfg: Config, out: Path) -> None:
    """A short sweep: the split, a table per batch size and the speedup figure; under
    ``torchrun``, this process is one stage ([`launch`][reference.async_pipeline.launch]) and only
    rank 0 prints."""
    from reference.harness.machine import launched_rank

    if launched_rank() is not None:
        return _launched_demo(cfg, out)
    from .report import figure, print_sweep

    p, m = measured(cfg)
    print_sweep(p.split, p.units, m.rows, cfg.batches, p.limit["limit"])
    print(f"figure: {figure(m.rows, cfg, p.limit['limit'], out / f'{SLUG}-demo.png')}")


def _launched_demo(cfg: Config, out: Path) -> None:
    from glossary.i18n import ui_lang_from_env
    from glossary.resulttext import ResultText

    from .launch import report, run_ranks, write

    state = run_ranks(cfg)
    if state is not None:  # rank 0
        report(*write(cfg, state, out), ResultText(SLUG, ui_lang_from_env()))
