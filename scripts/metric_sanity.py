"""Do the quality yardsticks measure what they claim? Four tables, printed as Markdown.

Usage: ``python scripts/metric_sanity.py [--n 64,128] [--draws 50] [--seeds 0,1,2,3,4]
[--bootstrap-n 128] [--resamples 1000] [--no-bootstrap]``

1. Where the old KID's offsets came from (`reference.harness.scores`, eq. (3)): the old real row
   (class-balanced training digits against the 300 test digits, plain estimator) beside the same
   draws unbalanced and with the class-weighted estimator, and two disjoint held-out halves.
2. The old real row (training digits) beside the held-out one (`scores.real_row`).
3. The degradation table on the real half (`reference.harness.degradations`) and any metric
   that does not move the expected way.
4. (needs the zoo teacher) DDIM at 10 against 50 steps on the clipped ODE: the seed-only t
   interval of the FDD and KID ratios beside the interval that also resamples the reference.

Tables 1-3 take seconds; table 4 samples ``2 x seeds`` sets of ``--bootstrap-n`` images (the
whole script with ``--n 64,128,256``: 1 min 56 s on one thread of an idle 2-core machine). Sizes
above 140 (halves) or 148 (the held-out real row) print "n/a": those digits do not exist.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's packages


def _ints(text: str) -> list[int]:
    return [int(s) for s in text.split(",")]


def _fmt(lo_hi: tuple[float, float], digits: int = 3) -> str:
    return f"[{lo_hi[0]:.{digits}g}, {lo_hi[1]:.{digits}g}]"


def kernel_gap() -> tuple[float, float]:
    """Mean kernel value of two different held-out digits of one class, and of two classes."""
    from reference.harness import scores as S

    held = S.held_out_features()
    k = S.cubic_kernel(held.features, held.features)
    same = [k[np.ix_(held.labels == c, held.labels == c)] for c in range(10)]
    same_mean = np.mean([(b.sum() - np.trace(b)) / (len(b) * (len(b) - 1)) for b in same])
    cross = k[held.labels[:, None] != held.labels[None, :]].mean()
    return float(same_mean), float(cross)


HALF_N = 140
"""The largest n drawn class-balanced from a random half of the held-out digits (14 per class)."""


def _random_halves(labels: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    order = rng.permutation(len(labels))
    first = np.sort(np.concatenate([order[labels[order] == c][::2] for c in range(10)]))
    return first, np.setdiff1d(np.arange(len(labels)), first)


def _mean_ci(values: list[float]) -> tuple[float, str]:
    from reference.harness.stats import mean_interval

    mean, ci = mean_interval(values)
    return mean, _fmt(ci)


def offsets_table(ns: list[int], draws: int) -> None:
    from reference.data import load_digits_tensors
    from reference.harness import quality as Q
    from reference.harness import scores as S

    same, cross = kernel_gap()
    print(
        f"\nKernel means on held-out features: same class {same:.0f}, cross class {cross:.0f}, "
        f"gap {same - cross:.0f}\n"
    )
    print(
        "| n | old row: balanced train vs test, (2) | unbalanced train vs test, (2) | "
        "balanced train vs test, (6) | predicted (3), one balanced side | "
        "held-out halves, (2) | held-out halves, (6) |"
    )
    print("|---|---|---|---|---|---|---|")
    held = S.held_out_features()
    xt, yt = load_digits_tensors("train")
    train = Q.classifier_features(xt).numpy()
    for n in ns:
        gen, rng = torch.Generator().manual_seed(0), np.random.default_rng(0)
        old, unbalanced, weighted, plain_h, weighted_h = [], [], [], [], []
        for _ in range(draws):
            pick = Q.balanced_subset(yt, n, gen).numpy()
            old.append(S.kid(train[pick], held.features))
            weighted.append(S.kid(train[pick], held.features, yt.numpy()[pick], held.labels))
            iid = rng.choice(len(yt), n, replace=False)
            unbalanced.append(S.kid(train[iid], held.features))
            if n > HALF_N:
                continue
            halves = _random_halves(held.labels, rng)
            labels = torch.from_numpy(held.labels)
            a, b = (held.subset(h[Q.balanced_subset(labels[h], n, gen).numpy()]) for h in halves)
            plain_h.append(S.kid(a.features, b.features))
            weighted_h.append(S.kid(a.features, b.features, a.labels, b.labels))
        cells = [f"{np.mean(v):.0f}" for v in (old, unbalanced, weighted)]
        cells.append(f"{-0.9 * (same - cross) / (n - 1):.0f}")
        for v in (plain_h, weighted_h):
            cells.append("n/a" if not v else "{:.0f} {}".format(*_mean_ci(v)))
        print(f"| {n} | " + " | ".join(cells) + " |")


def real_rows(ns: list[int], draws: int) -> None:
    from reference.harness import quality as Q
    from reference.harness import scores as S

    print(
        "\n| n | FDD, training digits (old) | FDD, held-out | KID, training digits (old) | "
        "KID (6), held-out |"
    )
    print("|---|---|---|---|---|")
    for n in ns:
        old = Q.real_reference(n, draws)
        new = S.real_row(n, draws) if n <= S.MAX_REAL_N else None
        fdd = f"{new.fdd:.2f} {_fmt(new.fdd_range)}" if new else "n/a"
        kid = f"{new.kid:.0f} {_fmt(new.kid_range)}" if new else "n/a"
        print(
            f"| {n} | {old.fd_mean:.2f} {_fmt(old.fd_range)} | {fdd} | "
            f"{old.kid_mean:.0f} {_fmt(old.kid_range)} | {kid} |"
        )


def degradations() -> None:
    from reference.data import load_digits_tensors
    from reference.harness import degradations as D
    from reference.harness import scores as S

    x, y = load_digits_tensors("test")
    real = torch.tensor(S.held_out_split()[1])
    table = D.degradation_table(x[real], y[real])
    names = ["fdd", "kid", "kid_class", "accuracy", "diversity", "rms"]
    print("\n| degradation | strength | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for row in table:
        cells = " | ".join(f"{row.values[m]:.4g}" for m in names)
        print(f"| {row.degradation} | {row.strength:g} | {cells} |")
    failures = D.monotone_failures(table)
    print("\nmonotone: " + ("every checked metric moves its way" if not failures else ""))
    for line in failures:
        print(f"- {line}")


def bootstrap_example(n: int, seeds: list[int], resamples: int) -> None:
    from reference import zoo
    from reference.harness import ode
    from reference.harness import scores as S
    from reference.harness.quality import classifier_features
    from reference.harness.sampling import class_labels, make_noise, model_eps_fn
    from reference.harness.stats import paired_ratio

    eps = model_eps_fn(zoo.load_teacher())
    labels = class_labels(n)
    sets: dict[int, list[S.FeatureSet]] = {10: [], 50: []}
    for seed in seeds:
        noise = make_noise(n, seed)
        for steps, out in sets.items():
            x = ode.solve(eps, noise, sampler="ddim", steps=steps, labels=labels)
            out.append(S.FeatureSet(classifier_features(x).numpy(), labels.numpy()))
    ref = S.reference_set()
    print(f"\nDDIM-10 / DDIM-50, n = {n}, seeds {seeds}, reference half of {len(ref.labels)}\n")
    print(
        "| metric | per-seed values (10 steps / 50 steps) | t interval (seeds) | ratio of sums | "
        "bootstrap, seeds only | bootstrap, seeds and reference sets |"
    )
    print("|---|---|---|---|---|---|")
    for metric in S.METRICS:
        fn = S.METRICS[metric]
        a = [fn(s.features, s.labels, ref) for s in sets[10]]
        b = [fn(s.features, s.labels, ref) for s in sets[50]]
        per_seed = ", ".join(f"{x:.4g}/{y:.4g}" for x, y in zip(a, b, strict=True))
        if min(a + b) <= 0:  # a ratio of values within noise of 0 means nothing
            print(f"| {metric} | {per_seed} | n/a: a value <= 0 | | | |")
            continue
        t = paired_ratio(a, b)
        got = S.ratio_interval(sets[10], sets[50], metric, resamples=resamples)
        print(
            f"| {metric} | {per_seed} | {t.value:.3f} {_fmt(t.interval)} | {got.value:.3f} | "
            f"{_fmt(got.seed_only)} | {_fmt(got.interval)} (sets of {got.subset_size}) |"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", default="64,128", help="set sizes of tables 1-2 (default 64,128)")
    p.add_argument("--draws", type=int, default=50, help="draws per size (default 50)")
    p.add_argument("--seeds", default="0,1,2,3,4", help="noise seeds of table 4")
    p.add_argument("--bootstrap-n", type=int, default=128, help="samples per seed, table 4")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples, table 4")
    p.add_argument("--no-bootstrap", action="store_true", help="skip table 4 (no sampling)")
    args = p.parse_args()
    try:
        ns, seeds = _ints(args.n), _ints(args.seeds)
    except ValueError:
        p.error("--n and --seeds take comma-separated integers")
    from reference.harness import scores as S

    reference, real = S.held_out_split()
    print(
        f"reference half {len(reference)} digits, real half {len(real)}, "
        f"largest balanced n of the real half {S.max_balanced_n(S.real_set().labels)}"
    )
    offsets_table(ns, args.draws)
    real_rows(ns, args.draws)
    degradations()
    if not args.no_bootstrap:
        bootstrap_example(args.bootstrap_n, seeds, args.resamples)


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
