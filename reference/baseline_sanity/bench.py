"""Is the baseline sound? DDIM on the clipped ODE against its converged solution.

Idea
----
A quality ratio "technique / DDIM-50" means something only if DDIM-50 is a good approximation
of what the technique also approximates, and if more steps bring DDIM closer to it. This study
checks that before any technique is judged against the baseline, on the zoo teacher, from the
same noise for every row (paired over seeds):

* **fidelity**: the per-sample RMS distance of DDIM at 5 to 1000 steps on the clipped ODE
  (`reference.harness.ode`) to the solution (DPM-Solver++(2M) at 200 steps), and of UniPC at
  200 steps, a second solver of higher order;
* **distribution**: the Fréchet digits distance (FDD) of every row;
* **the old baseline**: diffusers' DDIM as `reference.harness.sampling.sample` runs it (x̂₀
  clipped, the raw ε̂ in the update), at 10, 50 and 200 steps, against the same solution.

Aims (each judged on the 95% interval of a paired quantity over seeds):

    converges:         RMS(k_{i+1}) / RMS(k_i) < 1        for consecutive k up to 200     (1)
    fdd-does-not-rise: FDD(k_{i+1}) ≤ hi(FDD(k_i))        (the top of k_i's interval)    (2)
    solvers-agree:     RMS(UniPC-200) ≤ 2.7e-3            (two solvers, one solution)    (3)

(2) asks only that the FDD does not rise beyond the noise of the fewer-step row: the FDD is
not monotone in the steps even for a converging sampler (coarse DDIM smooths digits, which the
FDD rewards), and the paired ratio resolves changes of one percent. (3)'s limit is about the
float32 round-off floor at t = 999 (see `reference.harness.ode`) plus the solution's own error.

Pitfalls: from 200 to 1000 steps the RMS measures the 200-step solution's own error (about
2e-3), so (1) stops at 200; the FDD bias between step counts favours the coarser sampler by up
to about 10% (measured here), one more reason fidelity is the primary metric for training-free
approximations.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reference.harness.bounds import check_seeds
from reference.harness.entry import integer, integers, seeds
from reference.harness.results import (
    Aim,
    Measurement,
    Metric,
    Row,
    aim,
    metrics,
    note,
    settings_of,
)

if TYPE_CHECKING:  # torch is imported by the measurement only: the command line checks first
    import torch

    from reference.harness.compare import Outcome

CONTRACT = 2
SLUG = "baseline-sanity"
MAX_N = 1024
"""The most samples per seed (a seed's samples are held in memory with their solution)."""
BASELINE_STEPS = 50
"""The baseline every technique is judged against: DDIM at 50 steps."""
SOLVER_LIMIT = 2.7e-3
"""Aim (3): the round-off floor (1.1e-3 measured between DPM-Solver++ and UniPC at 200 steps)
plus the 200-step solution's own error (2e-3 against 500 steps), rounded up."""


@dataclass(frozen=True)
class Config:
    """``n`` samples per seed, ``seeds`` paired noise seeds, DDIM ``steps`` (ascending),
    ``old_steps`` of diffusers' DDIM, ``unipc_steps`` of the second solver, ``solution_steps``
    of the solution (fewer only in the quick configuration, which tests the code, not the claim)."""

    n: int = 128
    seeds: tuple[int, ...] = (0, 1, 2)
    steps: tuple[int, ...] = (5, 10, 20, 50, 100, 200, 1000)
    old_steps: tuple[int, ...] = (10, 50, 200)
    unipc_steps: int = 200
    solution_steps: int = 200

    def validate(self) -> None:
        """One-line ``ValueError`` for a size, a seed or a step list the study cannot use."""
        check_seeds(self.seeds)
        if not 8 <= self.n <= MAX_N:
            raise ValueError(f"n must be in 8..{MAX_N}, got {self.n}")
        for name in ("steps", "old_steps"):
            values = getattr(self, name)
            if not values or any(not 1 <= s <= 1000 for s in values):
                raise ValueError(f"{name} must be step counts in 1..1000, got {values}")
        if list(self.steps) != sorted(set(self.steps)) or len(self.steps) < 2:
            raise ValueError(f"steps must be at least two ascending counts, got {self.steps}")
        if BASELINE_STEPS not in self.steps:
            raise ValueError(f"steps must include the baseline's {BASELINE_STEPS}")
        for name in ("unipc_steps", "solution_steps"):
            if not 1 <= getattr(self, name) <= 1000:
                raise ValueError(f"{name} must be in 1..1000, got {getattr(self, name)}")


FULL = Config()
QUICK = Config(
    n=8, seeds=(0, 1), steps=(5, 10, 50), old_steps=(10,), unipc_steps=20, solution_steps=60
)
OPTIONS = (
    integer("n", low=8, high=MAX_N),
    seeds(),
    integers("steps", low=1, high=1000, min_count=2),
    integers("old_steps", low=1, high=1000),
    integer("unipc_steps", low=1, high=1000),
    integer("solution_steps", low=1, high=1000),
)
METRICS = metrics("fd_digits", rms_to_solution=Metric("", "lower"))


def _samplers(cfg: Config) -> dict[str, Any]:
    """Row id -> ``run(seed) -> samples``; every row starts from the seed's noise."""
    from reference import zoo
    from reference.harness import ode
    from reference.harness.sampling import class_labels, make_noise, model_eps_fn, sample

    eps = model_eps_fn(zoo.load_teacher())
    labels = class_labels(cfg.n)

    def new(s: int, name: str = "ddim") -> Any:
        return lambda seed: ode.solve(
            eps, make_noise(cfg.n, seed), sampler=name, steps=s, labels=labels
        )

    def old(s: int) -> Any:
        scheduler = zoo.teacher_scheduler
        return lambda seed: sample(
            eps, scheduler(), make_noise(cfg.n, seed), steps=s, labels=labels
        )

    def solution(seed: int) -> torch.Tensor:
        noise = make_noise(cfg.n, seed)
        return ode.solution(eps, noise, labels, steps=cfg.solution_steps)

    runs = {"solution": solution}
    runs |= {f"ddim-{s}": new(s) for s in cfg.steps}
    runs[f"unipc-{cfg.unipc_steps}"] = new(cfg.unipc_steps, "unipc")
    runs |= {f"diffusers-ddim-{s}": old(s) for s in cfg.old_steps}
    return runs


def measure_table(cfg: Config) -> Any:
    """The paired table: RMS to the seed's solution and FDD of every row."""
    from reference.harness import ode
    from reference.harness.quality import frechet_digits_distance
    from reference.harness.seeds import over_seeds

    def scores(key: str, samples: torch.Tensor, same_seed: dict[str, Any]) -> dict[str, float]:
        out = {"fd_digits": frechet_digits_distance(samples)}
        if key != "solution":
            out["rms_to_solution"] = float(ode.rms_to(samples, same_seed["solution"]).mean())
        return out

    return over_seeds(_samplers(cfg), scores, cfg.seeds, desc="sanity seeds")


_ROLES = {"dpmpp2m": "reference", "unipc": "control", "diffusers-ddim": "control"}
"""Row roles: DDIM-50 is the baseline; the other DDIM rows are the sampler under test."""


def _rows(cfg: Config, table: Any) -> list[Row]:
    rows = []
    for key in table.values:
        values, intervals, seeds = table.row_fields(key)
        name = f"dpmpp2m-{cfg.solution_steps}" if key == "solution" else key
        method, _, steps = name.rpartition("-")
        role = _ROLES.get(method, "technique") if key != f"ddim-{BASELINE_STEPS}" else "baseline"
        config = {"method": method, "steps": int(steps)}
        rows.append(Row(key, config, role, values, intervals, seeds=seeds))
    return rows


def _aims(cfg: Config, table: Any) -> list[Aim]:
    out = []
    converging = [s for s in cfg.steps if s <= 200]
    for fewer, more in itertools.pairwise(converging):
        r = table.ratio(f"ddim-{more}", f"ddim-{fewer}", "rms_to_solution")
        out.append(
            aim(
                "converges",
                r.value,
                1.0,
                "<",
                r.interval,
                row=f"ddim-{more}",
                against=f"ddim-{fewer}",
                steps=more,
                fewer=fewer,
            )
        )  # (1)
    for fewer, more in itertools.pairwise(cfg.steps):
        top = table.summary(f"ddim-{fewer}", "fd_digits").interval[1]
        f = table.summary(f"ddim-{fewer}", "fd_digits").value
        r = table.ratio(f"ddim-{more}", f"ddim-{fewer}", "fd_digits")
        out.append(
            aim(
                "fdd-does-not-rise",
                r.value,
                top / f,
                "<=",
                r.interval,
                row=f"ddim-{more}",
                against=f"ddim-{fewer}",
                steps=more,
                fewer=fewer,
            )
        )  # (2)
    u = table.summary(f"unipc-{cfg.unipc_steps}", "rms_to_solution")
    out.append(
        aim(
            "solvers-agree",
            u.value,
            SOLVER_LIMIT,
            "<=",
            u.interval,
            row=f"unipc-{cfg.unipc_steps}",
            against="solution",
            steps=cfg.unipc_steps,
        )
    )  # (3)
    return out


def _notes(cfg: Config, table: Any) -> list[Any]:
    from reference.harness.seeds import quality_note

    rms = {s: table.summary(f"ddim-{s}", "rms_to_solution").value for s in cfg.steps}
    old = {s: table.summary(f"diffusers-ddim-{s}", "rms_to_solution").value for s in cfg.old_steps}
    fdd = {s: table.summary(f"ddim-{s}", "fd_digits").value for s in cfg.steps}
    low = min(fdd, key=fdd.__getitem__)
    notes = [
        quality_note(cfg.n, cfg.seeds),
        note("solution", steps=cfg.solution_steps),
        note("fdd-dip", steps=low, fdd=fdd[low], most=max(cfg.steps), fdd_most=fdd[max(cfg.steps)]),
    ]
    first, last = min(cfg.old_steps), max(cfg.old_steps)
    closest = min(cfg.steps, key=lambda s: abs(s - last))  # the new DDIM row nearest in steps
    notes.append(
        note(
            "old-ddim",
            first=first,
            last=last,
            rms_first=old[first],
            rms_last=old[last],
            steps=closest,
            rms_new=rms[closest],
        )
    )
    return notes


def benchmark(cfg: Config) -> Measurement:
    """Every row of ``cfg`` on every seed, paired; no timing (nothing here is a speedup)."""
    table = measure_table(cfg)
    return Measurement(
        settings=settings_of(cfg, solution="dpmpp2m", clip=True),
        metrics=METRICS,
        rows=_rows(cfg, table),
        headline=None,
        aims=_aims(cfg, table),
        notes=_notes(cfg, table),
        figures=[],
    )


def measure(cfg: Config, staging: Path) -> Outcome:
    """The result's body (no figures): `benchmark` in the schema the command line writes."""
    from reference.harness.compare import Outcome, body_of

    return Outcome(body_of(benchmark(cfg)), [])


def demo(cfg: Config, out: Path) -> None:
    """Print the quick table."""
    m = benchmark(cfg)
    for row in m.rows:
        print(f"{row.id:20} " + "  ".join(f"{k} {v:.4g}" for k, v in row.values.items()))
