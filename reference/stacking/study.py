"""The study: every configuration built, timed in one interleaved comparison, scored on paired
seeds, then the greedy stacks, each stage timed against the previous one.

Protocol (the harness's rules, `reference.harness`)
===================================================
1. **Build and warm.** Every configuration runs once on the latency batch. This compiles the
   compiled variants before any clock is read, and its output is the exactness check: a
   configuration that differs from another only by exact elements (fusion, compile) must give
   the same samples to ``EXACT_TOL``.
2. **Latency.** All configurations of phase 1 (baseline, singles, variants, pairs, DDIM-k
   controls) in **one** comparison: ``repeats`` rounds, each calling every function once in an
   order rotated per round, so an interaction factor's four medians come from the same rounds.
3. **Quality.** Each configuration that changes the samples is scored on ``seeds`` (paired: the
   same noise and labels for all) at ``n`` class-balanced samples against the reference half of
   the held-out digits (`reference.harness.scores.held_out_score`: FDD, class-weighted KID,
   accuracy, diversity). The exact ones inherit their parent's per-seed values.
4. **Greedy.** From the empty stack, each stage adds the compatible element with the best gain
   (`reference.stacking.stats.gain`) among the candidates whose FDD ratio stays within the
   budget; stages 1-2 reuse phase 1, later stages are timed in a comparison of their own (with
   the baseline and the previous stack) and scored like phase 1.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any

import torch

from reference.compatibility import verdict

from .compose import compose
from .elements import ELEMENTS, element, ordered, quality_members, row_id
from .pipeline import DiffusersSampler, Models, Pipeline

if TYPE_CHECKING:
    from .settings import Config

EXACT_TOL = 1e-3
"""Largest pixel deviation (images in [-1, 1]) an exact element may cause. Fusion and leaf
compilation reorder float sums only (about 1e-6 on the teacher); 1e-3 is far below a visible
change and far above rounding."""


@dataclass
class Configuration:
    """One measured point: a stack, a step variant, the baseline or a DDIM-k control."""

    id: str
    members: tuple[str, ...]
    origin: str  # base | single | variant | pair | stack | control
    pipeline: Pipeline
    steps: int | None = None
    quality_of: str | None = None  # the configuration whose samples it reproduces
    max_abs: float | None = None


@dataclass
class Study:
    """Everything measured; `reference.stacking.rows` turns it into the result."""

    cfg: Config
    models: Models
    configs: dict[str, Configuration] = field(default_factory=dict)
    latency: dict[str, Any] = field(default_factory=dict)  # id -> its LatencyComparison
    table: Any = None  # SeedTable over the same seeds for every configuration
    greedy: list[str] = field(default_factory=list)
    greedy_left: str | None = None
    compile_status: str = "ok"
    compile_seconds: float = 0.0
    outputs: dict[str, torch.Tensor] = field(default_factory=dict)

    @property
    def phase1(self) -> Any:
        return self.latency["base"]

    def speedup(self, cid: str) -> float:
        return float(self.latency[cid].speedup[cid])


def compatible(members: Iterable[str]) -> bool:
    ids = list(members)
    return all(
        verdict(ELEMENTS[a].slug, ELEMENTS[b].slug).compatible for a, b in combinations(ids, 2)
    )


def stack_config(cfg: Config, members: tuple[str, ...], origin: str) -> Configuration:
    members = ordered(members)
    return Configuration(row_id(members), members, origin, compose(members, cfg))


def phase1_configs(cfg: Config) -> list[Configuration]:
    """Baseline, singles, step variants, compatible pairs and DDIM-k controls."""
    out = [Configuration("base", (), "base", compose((), cfg), steps=cfg.base_steps)]
    out += [stack_config(cfg, (e,), "single") for e in cfg.elements]
    for e, steps in cfg.variants:
        field_name = {"student": "student_steps", "consistency": "cm_steps"}[e]
        pipe = compose((e,), dataclasses.replace(cfg, **{field_name: steps}))
        out.append(Configuration(f"{e}{steps}", (e,), "variant", pipe, steps=steps))
    out += [
        stack_config(cfg, pair, "pair")
        for pair in combinations(ordered(cfg.elements), 2)
        if compatible(pair)
    ]
    for k in cfg.control_steps:
        pipe = Pipeline((), DiffusersSampler("ddim", k))
        out.append(Configuration(f"ddim-{k}", (), "control", pipe, steps=k))
    return out


def _inputs(cfg: Config, c: Configuration, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    from reference.harness import class_labels, make_noise

    return make_noise(n, seed, c.pipeline.noise_shape), class_labels(n)


def warm(study: Study, configs: list[Configuration], bar: Callable[..., Any]) -> None:
    """Step 1: one run of each on the latency batch (compiles), kept for the exactness check."""
    cfg = study.cfg
    for c in bar(configs, desc="stacking: build and warm", unit="config"):
        start = time.perf_counter()
        noise, labels = _inputs(cfg, c, cfg.latency_batch, 0)
        study.outputs[c.id] = c.pipeline.run(study.models, noise, labels, 0)
        if "compile" in c.members:
            study.compile_seconds += time.perf_counter() - start
    for c in configs:
        parent = row_id(quality_members(c.members))
        if c.origin in ("pair", "single", "stack") and parent != c.id and parent in study.outputs:
            deviation = (study.outputs[c.id] - study.outputs[parent]).abs().max().item()
            c.max_abs = float(deviation)
            c.quality_of = parent if deviation <= EXACT_TOL else None


def time_rounds(study: Study, configs: list[Configuration], bar: Callable[..., Any]) -> Any:
    """Step 2: `compare_latency`'s protocol, one round at a time so the bar moves."""
    from reference.harness import compare_latency
    from reference.harness.cost import LatencyComparison
    from reference.harness.cost import _stats as latency_stats

    cfg = study.cfg
    inputs = {c.id: _inputs(cfg, c, cfg.latency_batch, 0) for c in configs}
    funcs = {c.id: (lambda c=c: c.pipeline.run(study.models, *inputs[c.id], 0)) for c in configs}
    names = list(funcs)
    for _ in range(cfg.warmup):
        compare_latency(funcs, repeats=1, warmup=0)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in bar(
        range(cfg.repeats), desc=f"stacking: latency ({len(names)} configs)", unit="round"
    ):
        k = r % len(names)
        rotated = {n: funcs[n] for n in names[k:] + names[:k]}
        one = compare_latency(rotated, repeats=1, warmup=0)
        for n in names:
            samples[n] += one.stats[n].samples_ms
    stats = {n: latency_stats(s) for n, s in samples.items()}
    base = stats[names[0]].median_ms
    speedup = {n: base / s.median_ms for n, s in stats.items()}
    lat = LatencyComparison(
        names[0], stats, speedup, torch.get_num_threads(), cfg.repeats, cfg.warmup, names
    )
    for n in names:
        study.latency.setdefault(n, lat)
    return lat


def score(study: Study, configs: list[Configuration], bar: Callable[..., Any]) -> None:
    """Step 3: paired quality over seeds; exact configurations inherit their parent's values."""
    from reference.harness import SeedTable, over_seeds
    from reference.harness.scores import held_out_score

    cfg = study.cfg
    if study.table is None:
        study.table = SeedTable(tuple(cfg.seeds))
    todo = [c for c in configs if c.quality_of is None and c.id not in study.table.values]
    for c in bar(todo, desc="stacking: quality", unit="config"):

        def run(seed: int, c: Configuration = c) -> torch.Tensor:
            return c.pipeline.run(study.models, *_inputs(cfg, c, cfg.n, seed), seed)

        scorer = held_out_score(cfg.n)
        sub = over_seeds({c.id: run}, lambda k, x, same, f=scorer: f(x, same), cfg.seeds)
        study.table.values[c.id] = sub.values[c.id]
    for c in configs:
        if c.quality_of is not None:
            study.table.values[c.id] = study.table.values[c.quality_of]


def measure(study: Study, configs: list[Configuration], bar: Callable[..., Any]) -> Any:
    """Steps 1-3 for ``configs`` (the first one is the comparison's baseline); returns the
    latency comparison."""
    for c in configs:
        study.configs.setdefault(c.id, c)
    warm(study, configs, bar)
    lat = time_rounds(study, configs, bar)
    score(study, configs, bar)
    return lat


def fd_ratio(study: Study, cid: str, against: str = "base") -> float:
    return float(study.table.ratio(cid, against, "fd_digits").value)


def run_greedy(study: Study, bar: Callable[..., Any]) -> None:
    """Step 4: the greedy path under ``cfg.budget`` (see the module docstring).

    A candidate counts only if it is faster than the previous stack with its interval (the
    paired bootstrap of the two in one comparison), so a no-op that timed lucky is never added.
    """
    from .stats import Term, gain, speedup_product

    cfg = study.cfg
    anchor: tuple[str, ...] = ()
    lat = study.phase1
    for _stage in range(cfg.max_stages):
        cands = [ordered((*anchor, e)) for e in cfg.elements if e not in anchor]
        ids = [row_id(c) for c in cands if compatible(c)]
        if not ids:
            break
        a_id = row_id(anchor)
        if any(i not in study.configs for i in ids):
            new = [stack_config(cfg, tuple(i.split(".")), "stack") for i in ids]
            lat = measure(study, [study.configs["base"], study.configs[a_id], *new], bar)

        def faster(i: str, lat: Any = lat, a_id: str = a_id) -> float:
            return speedup_product([Term(lat, i, a_id)])[1][0]

        inside = [i for i in ids if fd_ratio(study, i) <= cfg.budget and faster(i) > 1.0]
        if not inside:
            outside = [i for i in ids if faster(i) > 1.0]
            study.greedy_left = max(outside, key=study.speedup) if outside else None
            break
        best = max(inside, key=lambda i: gain(lat.speedup_over(i, a_id), fd_ratio(study, i, a_id)))
        study.greedy.append(best)
        anchor = study.configs[best].members


def run_study(cfg: Config, bar: Callable[..., Any]) -> Study:
    """The whole study for ``cfg`` (``bar`` wraps iterables in a progress bar)."""
    from .compile import compile_available

    study = Study(cfg, Models(cfg))
    if "compile" in cfg.elements:
        ok, why = compile_available(cfg.compile_backend)
        if not ok:
            study.compile_status = "failed"
            print(f"torch.compile ({cfg.compile_backend}) does not run here: {why}")
            cfg = dataclasses.replace(
                cfg, elements=tuple(e for e in cfg.elements if e != "compile")
            )
            study.cfg = cfg
    for e in cfg.elements:
        element(e)
    measure(study, phase1_configs(cfg), bar)
    run_greedy(study, bar)
    return study
