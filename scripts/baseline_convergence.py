"""Does the baseline converge? The zoo teacher's samplers against the converged solution.

Usage: ``python scripts/baseline_convergence.py [-n 32] [--seeds 0,1] [--steps 5,10,20,50,100,200]``

Prints, per sampler and step count, the mean per-sample RMS distance to the solution
(DPM-Solver++(2M) at 200 steps on the clipped ODE, `reference.harness.ode`) from the same noise,
with the range over seeds. Rows: DDIM on the clipped ODE at every step count; UniPC, DPM-Solver++
and Euler at 10 and 50 steps; and diffusers' DDIM as `reference.harness.sampling.sample` runs it
(x̂₀ clipped, raw ε̂ in the update), whose distance grows after about 20 steps. Takes about a
minute per seed at n = 32 on two cores.
"""

from __future__ import annotations

import argparse

import torch


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=32, help="samples per seed (default 32)")
    p.add_argument("--seeds", default="0,1", help="comma-separated noise seeds (default 0,1)")
    p.add_argument("--steps", default="5,10,20,50,100,200", help="DDIM step counts")
    args = p.parse_args()
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
        steps = [int(s) for s in args.steps.split(",")]
    except ValueError:
        p.error("--seeds and --steps take comma-separated integers")
    if args.n < 1 or any(not 1 <= s <= 1000 for s in steps):
        p.error("-n must be at least 1 and every step count in 1..1000")

    from reference import zoo
    from reference.harness import ode
    from reference.harness.sampling import class_labels, make_noise, model_eps_fn, sample

    eps = model_eps_fn(zoo.load_teacher())
    configs = [("ddim", s) for s in steps]
    configs += [(name, s) for name in ("unipc", "dpmpp2m", "euler") for s in (10, 50)]
    configs += [("diffusers-ddim", s) for s in steps]
    table: dict[tuple[str, int], list[float]] = {c: [] for c in configs}
    for seed in seeds:
        noise, labels = make_noise(args.n, seed), class_labels(args.n)
        sol = ode.solution(eps, noise, labels)
        for name, s in configs:
            if name == "diffusers-ddim":
                x = sample(eps, zoo.teacher_scheduler(), noise, steps=s, labels=labels)
            else:
                x = ode.solve(eps, noise, sampler=name, steps=s, labels=labels)
            table[(name, s)].append(float(ode.rms_to(x, sol).mean()))
    print("| sampler | steps | RMS to solution (mean) | min-max over seeds |")
    print("|---|---|---|---|")
    for (name, s), values in table.items():
        mean = sum(values) / len(values)
        print(f"| {name} | {s} | {mean:.4f} | {min(values):.4f}-{max(values):.4f} |")


if __name__ == "__main__":
    torch.set_num_threads(2)
    main()
