"""Stochastic reparameterization: exact identities, oracles from diffusers, sampler invariants."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from reference.stochastic_reparameterization import (
    PARAMETERIZATIONS,
    EDMPreconditioning,
    LossSecondMomentHistory,
    NoiseSchedule,
    Parameterization,
    Sampling,
    TimestepProposal,
    draw,
    edm_proposal,
    low_discrepancy_uniforms,
    uniform_proposal,
)
from reference.stochastic_reparameterization.variance import (
    GradientMoments,
    decompose,
    estimate,
    loss_draws,
    trace_ratio_ci,
    variance_ratio_ci,
)


@pytest.fixture(scope="module")
def schedule() -> NoiseSchedule:
    return NoiseSchedule.zoo()


def batch(n: int = 16, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x0 = torch.rand(n, 1, 16, 16, generator=gen) * 2 - 1
    return x0, torch.randn(x0.shape, generator=gen), torch.randint(0, 1000, (n,), generator=gen)


@pytest.mark.parametrize("name", PARAMETERIZATIONS)
def test_native_loss_is_a_weighted_x0_error(name: str, schedule: NoiseSchedule) -> None:
    p = Parameterization(name, schedule, EDMPreconditioning(0.5))
    x0, eps, t = batch()
    x_t = schedule.add_noise(x0, eps, t)
    out = torch.randn(x0.shape, generator=torch.Generator().manual_seed(1))
    native = p.loss_per_example(out, x0, eps, t).double()
    x0_error = (p.to_x0(out, x_t, t) - x0).double().square().flatten(1).mean(1)
    torch.testing.assert_close(native, p.x0_weight(t) * x0_error, rtol=1e-4, atol=0)
    # the target is the prediction that recovers x0 and eps exactly
    target = p.target(x0, eps, t)
    torch.testing.assert_close(p.to_x0(target, x_t, t), x0, rtol=0, atol=1e-3)
    torch.testing.assert_close(p.to_eps(target, x_t, t), eps, rtol=0, atol=1e-3)


@pytest.mark.parametrize("name", PARAMETERIZATIONS)
def test_eps_error_weight_rewrites_an_eps_network_in_any_parameterization(
    name: str, schedule: NoiseSchedule
) -> None:
    eps_p = Parameterization("eps", schedule, EDMPreconditioning(0.5))
    p = Parameterization(name, schedule, EDMPreconditioning(0.5))
    x0, eps, t = batch()
    t = t.clamp(max=900)  # keep 1/SNR moderate so float32 conversions stay accurate
    x_t = schedule.add_noise(x0, eps, t)
    eps_hat = eps + 0.1 * torch.randn(eps.shape, generator=torch.Generator().manual_seed(2))
    x0_hat = eps_p.to_x0(eps_hat, x_t, t)
    out_p = p.target(x0_hat.double(), eps_hat.double(), t)  # the same denoiser, read as p
    native = p.loss_per_example(out_p, x0.double(), eps.double(), t)
    eps_error = (eps_hat - eps).double().square().flatten(1).mean(1)
    torch.testing.assert_close(native, p.eps_error_weight(t) * eps_error, rtol=1e-3, atol=0)


def test_v_target_matches_diffusers_get_velocity(schedule: NoiseSchedule) -> None:
    from reference.zoo import teacher_scheduler

    x0, eps, t = batch()
    p = Parameterization("v", schedule, EDMPreconditioning(0.5))
    expected = teacher_scheduler("DDPMScheduler").get_velocity(x0, eps, t)
    torch.testing.assert_close(p.target(x0, eps, t), expected, rtol=1e-5, atol=1e-5)


def test_edm_preconditioning_matches_diffusers_edm_scheduler() -> None:
    from diffusers import EDMEulerScheduler

    sched = EDMEulerScheduler(sigma_data=0.7)
    edm = EDMPreconditioning(0.7)
    sigma = torch.tensor([0.01, 0.3, 1.0, 5.0, 80.0], dtype=torch.float64)
    x = torch.randn(5, 1, 2, 2, dtype=torch.float64)
    f = torch.randn(5, 1, 2, 2, dtype=torch.float64)
    s4 = sigma.reshape(-1, 1, 1, 1)
    torch.testing.assert_close(sched.precondition_inputs(x, s4), edm.c_in(s4) * x)
    torch.testing.assert_close(sched.precondition_noise(sigma), edm.c_noise(sigma))
    torch.testing.assert_close(
        sched.precondition_outputs(x, f, s4), edm.c_skip(s4) * x + edm.c_out(s4) * f
    )
    torch.testing.assert_close(edm.loss_weight(sigma), edm.c_out(sigma) ** -2)


def test_low_discrepancy_puts_one_point_in_every_stratum() -> None:
    u = low_discrepancy_uniforms(64, torch.Generator().manual_seed(0)).sort().values
    k = torch.arange(64, dtype=torch.float64)
    assert bool(((u >= k / 64) & (u < (k + 1) / 64)).all())


def test_proposals_sample_their_pmf(schedule: NoiseSchedule) -> None:
    gen = torch.Generator().manual_seed(0)
    point = torch.zeros(1000, dtype=torch.float64)
    point[417] = 1.0
    assert bool((TimestepProposal("point", point).sample(50, gen) == 417).all())
    edm = edm_proposal(schedule)
    log_sigma = schedule.edm_sigma(edm.sample(200_000, gen)).log()
    assert abs(float(log_sigma.mean()) + 1.2) < 0.02
    assert abs(float(log_sigma.std()) - 1.2) < 0.02
    strat = uniform_proposal(1000).sample(1000, gen, stratified=True)
    assert sorted(strat.tolist()) == list(range(1000))
    with pytest.raises(ValueError, match="sums to"):
        TimestepProposal("bad", torch.full((10,), 0.2, dtype=torch.float64))


def test_loss_history_is_uniform_until_warm_then_tracks_the_second_moment() -> None:
    h = LossSecondMomentHistory(T=100, bins=4, history=2, uniform_prob=0.0)
    assert h.proposal().name == "uniform"
    t = torch.tensor([0, 30, 60, 90] * 2)
    h.update(t, torch.tensor([1.0, 2.0, 3.0, 4.0] * 2))
    assert h.warm
    pmf = h.proposal().pmf
    per_bin = torch.stack([pmf[i * 25 : (i + 1) * 25].sum() for i in range(4)])
    torch.testing.assert_close(per_bin, torch.tensor([1, 2, 3, 4], dtype=torch.float64) / 10)


def test_antithetic_draws_come_in_negated_pairs() -> None:
    gen = torch.Generator().manual_seed(0)
    d = draw(Sampling(antithetic=True), uniform_proposal(1000), 50, 8, (1, 4, 4), gen)
    assert torch.equal(d.index[:4], d.index[4:]) and torch.equal(d.t[:4], d.t[4:])
    assert torch.equal(d.eps[:4], -d.eps[4:])  # exact: negation only flips the sign bit
    with pytest.raises(ValueError, match="even batch"):
        draw(Sampling(antithetic=True), uniform_proposal(1000), 50, 7, (1,), gen)
    with pytest.raises(ValueError, match="unknown proposal 'bogus'"):
        Sampling("bogus")


def test_importance_weights_keep_the_objective_and_stratification_cuts_variance() -> None:
    """A synthetic loss dominated by its t-dependence: l = (t / T)^2 + 0.01 * eps_0."""

    def loss_fn(index: torch.Tensor, t: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
        return (t.double() / 1000) ** 2 + 0.01 * eps[:, 0].double()

    uniform = uniform_proposal(1000)
    q_pmf = (torch.arange(1000, dtype=torch.float64) + 1) ** 2
    q = TimestepProposal("importance", q_pmf / q_pmf.sum())
    gen = torch.Generator().manual_seed(0)
    est = {}
    for key, sampling, proposal in [
        ("iid", Sampling(), uniform),
        ("ld", Sampling(stratified=True), uniform),
        ("is", Sampling("importance"), q),
    ]:
        ds = loss_draws(loss_fn, 10, (1,), sampling, proposal, 16, 300, gen)
        est[key] = torch.stack([estimate(d, loss, uniform.pmf) for d, loss in ds])
    exact = float(((torch.arange(1000, dtype=torch.float64) / 1000) ** 2).mean())
    for values in est.values():  # unbiased: within 4 standard errors of the exact objective
        assert abs(float(values.mean()) - exact) < 4 * float(values.std()) / 300**0.5 + 1e-12
    assert variance_ratio_ci(est["iid"], est["ld"])[1] > 2  # lower end of the 95% interval
    assert variance_ratio_ci(est["iid"], est["is"])[1] > 2


def test_decomposition_is_exact_on_constructed_losses() -> None:
    t = torch.arange(1000).repeat(2)
    loss = (t // 100).double()  # constant within each of 10 bins: all variance is between-t
    pairs = torch.tensor([[1.0, -1.0], [3.0, 1.0]])  # odd parts 1 and 1
    d = decompose((t, loss), pairs, T=1000, bins=10)
    assert d.within_t == pytest.approx(0.0, abs=1e-9)
    assert d.between_t == pytest.approx(d.total, rel=1e-3)
    assert d.odd_eps == pytest.approx(1.0)


def test_gradient_moments_match_torch_cov() -> None:
    g = torch.randn(50, 7, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    directions = torch.eye(7, dtype=torch.float64)[:3]
    m = GradientMoments(directions)
    for row in g:
        m.add(row, 0.0)
    # float64 sums over 50 draws in two orders: ~50 eps64 ~ 1e-14 relative, well below 1e-10
    assert m.trace_cov() == pytest.approx(float(torch.cov(g.T).trace()), rel=1e-10)
    proj = g[:, 0]
    assert m.projection_var() == pytest.approx(float(proj.var()), rel=1e-10)
    expected = float(g.mean(0).square().sum()) - m.trace_cov() / 50
    assert m.mean_norm_sq() == pytest.approx(expected, rel=1e-10)
    assert torch.equal(m.sketch(), g[:, :3])  # exact: dot products with unit vectors
    lo, hi = trace_ratio_ci(m, m)
    assert lo <= 1.0 <= hi


@pytest.mark.slow
def test_a_short_training_run_reports_its_yardsticks(schedule: NoiseSchedule) -> None:
    from reference.stochastic_reparameterization.training import Heldout, TrainScheme, train

    x0, _, _ = batch(64)
    heldout = Heldout.make(x0[:8], schedule.T, repeats=1)
    p = Parameterization("edm", schedule, EDMPreconditioning(0.7))
    scheme = TrainScheme("edm", "EDM", "edm", Sampling("edm", stratified=True, antithetic=True))
    proposals = (uniform_proposal(schedule.T), edm_proposal(schedule))
    _, curve = train(scheme, p, x0, heldout, proposals, steps=2, batch=4, eval_every=1)
    assert curve.examples == [0, 4, 8]
    assert all(v > 0 for v in curve.eps_mse + curve.x0_mse)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--batch", "7"], "--batch must be an even number >= 2"),
        (["--loss-draws", "3"], "--loss-draws"),
        (["--train-steps", "0"], "--train-steps"),
        (["--n-quality", "150"], "--n-quality"),  # more than the held-out real half offers
        (["--n-quality", "25"], "multiple of 10"),
        (["--seeds", "0"], "--seeds"),
        (["--train-seeds", "0"], "--train-seeds"),
    ],
)
def test_bad_options_are_one_line_before_any_training(
    args: list[str], message: str, refused_in_one_line: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reference.stochastic_reparameterization import bench

    monkeypatch.setattr(bench, "_studies", lambda cfg: pytest.fail("training started"))
    assert message in refused_in_one_line("reference.stochastic_reparameterization", args)


def test_quality_is_measured_at_the_held_out_real_rows_size_on_paired_seeds() -> None:
    from reference.harness.scores import MAX_REAL_N
    from reference.stochastic_reparameterization.bench import FULL, OPTIONS

    assert {o.name for o in OPTIONS} >= {"seeds", "train_seeds", "n_quality", "steps"}
    assert FULL.n_quality == 140 <= MAX_REAL_N and len(FULL.seeds) >= 5 and FULL.steps == 50


def test_run_scores_average_the_training_runs_and_keep_each_runs_fdd(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from reference.harness import scores
    from reference.stochastic_reparameterization.training_runs import RunScores

    def fake(n: int):  # the held-out score of a stand-in: its mean and twice it
        return lambda x, same: {"fd_digits": float(x.mean()), "kid_digits": 2 * float(x.mean())}

    monkeypatch.setattr(scores, "held_out_score", fake)
    score = RunScores(20)
    a, b = torch.stack([torch.full((20, 1), 1.0), torch.full((20, 1), 3.0)]), torch.ones(2, 20, 1)
    for seed_scale in (1.0, 2.0):  # two noise seeds
        same = {"train-a": a * seed_scale, "train-b": b * seed_scale}
        got = score(same["train-a"], same)
        # exact: means of small integers in float32, all representable
        assert got == {"fd_digits": 2.0 * seed_scale, "kid_digits": 4.0 * seed_scale}
        score(same["train-b"], same)
    assert score.fdd == {"train-a": [[1.0, 2.0], [3.0, 6.0]], "train-b": [[1.0, 2.0], [1.0, 2.0]]}


def test_mechanism_curves_bin_the_losses_and_keep_the_exact_weights() -> None:
    from reference.stochastic_reparameterization.notes import MECHANISM_BINS, mechanism_curves
    from reference.stochastic_reparameterization.studies import Context, LossStudy

    ctx = Context.make()
    T = ctx.schedule.T
    t = torch.tensor([5, 15, 25, 995])  # bins 0, 0, 1 and the last (20 steps a bin)
    loss = torch.tensor([1.0, 3.0, 2.0, 4.0], dtype=torch.float64)
    study = LossStudy({}, None, ctx.uniform, (t, loss))  # type: ignore[arg-type]
    c = mechanism_curves(ctx, study)
    width = T / MECHANISM_BINS
    assert c["t_loss"] == [0.5 * width, 1.5 * width, T - 0.5 * width]
    assert c["loss"][0] == [2.0, 2.0, 4.0]  # (1)
    assert c["loss"][1] == pytest.approx([5**0.5, 2.0, 4.0], rel=1e-12)  # (2), float64
    # (3): a uniform proposal has density 1 in every bin (float64 sums of 1/T: 1e-12 is loose)
    assert c["proposal"][0] == c["proposal"][1] == pytest.approx([1.0] * MECHANISM_BINS, 1e-12)
    centre = torch.tensor([round(x) for x in c["t"]])
    eps_weight = ctx.param("eps").eps_error_weight(centre).double().tolist()
    assert c["weight_series"][0] == "eps" and c["weight"][0] == eps_weight  # (4), the same call


@pytest.mark.slow
def test_quick_benchmark_scores_every_trained_scheme_over_paired_noise_seeds(
    quick_result,
) -> None:
    from reference.stochastic_reparameterization.studies import SCHEMES

    result = quick_result("stochastic-reparameterization")
    seeds = result["settings"]["seeds"]
    rows = {r["id"]: r for r in result["rows"]}
    assert result["rows"][0]["id"] == "train-eps" and rows["train-eps"]["role"] == "baseline"
    for scheme in SCHEMES:
        row = rows[f"train-{scheme.key}"]
        assert set(row["seeds"]) == {"fd_digits", "kid_digits"}  # unconditional: no labels
        for metric in ("fd_digits", "kid_digits"):
            assert len(row["seeds"][metric]) == len(seeds), (scheme.key, metric)
            lo, hi = row["intervals"][metric]
            assert lo <= row["values"][metric] <= hi
    assert rows["real"]["role"] == "reference"
    head = result["headline"]
    assert head["row"] == "train-eps-is-ld-anti" and head["quality_interval"] is not None
    notes = {n["id"]: n["params"] for n in result["notes"]}
    assert {"quality-protocol", "held-out-reference"} <= set(notes)
    assert len(notes["training-seeds"]["per_run"]) == result["settings"]["train_seeds"]
    assert [(a["id"], a["row"], a["against"]) for a in result["aims"]] == [
        ("loss-variance", "var-eps-is-ld-anti", "var-eps-iid"),
        ("gradient-variance", "var-eps-is-ld-anti", "var-eps-iid"),
    ]
    training = notes["training"]
    assert training["schemes"] == [s.key for s in SCHEMES]
    evaluations = len(training["examples_seen"])
    assert {len(c) for c in training["eps_mse"] + training["x0_mse"]} == {evaluations}
    mechanism = notes["mechanism"]
    for name in ("loss", "proposal", "weight"):
        assert len(mechanism[name]) == len(mechanism[f"{name}_series"])
