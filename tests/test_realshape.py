"""The real-shape study: every technique through its public shape, timed against the plain
model; the quick configuration runs it on tiny production classes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from reference.harness.study import STUDIES
from reference.harness.study import main as study_main
from reference.realshape import bench

STUDY = next(s for s in STUDIES if s.slug == "realshape")


def test_bad_options_are_refused_before_any_model_is_built(capsys: pytest.CaptureFixture) -> None:
    assert study_main(STUDY, ["--bench", "--models", "sd15,nope"]) == 2
    assert "--models: unknown value 'nope'; valid: sd15, dit-xl-2" in capsys.readouterr().err
    assert study_main(STUDY, ["--bench", "--techniques", "magic"]) == 2
    assert "'magic'" in capsys.readouterr().err
    assert study_main(STUDY, ["--bench", "--steps", "1"]) == 2
    assert study_main(STUDY, ["--bench", "--quik"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 2  # one line each


def test_the_torch_free_list_of_techniques_is_the_timed_one() -> None:
    from reference.realshape import variants

    assert tuple(variants.VARIANTS) == bench.TECHNIQUES
    assert {t for g in variants.GROUPS for t in g} == set(variants.VARIANTS)
    for v in variants.VARIANTS.values():  # a counterpart applies only where its technique does
        if v.counterpart is not None:
            assert set(variants.COUNTERPARTS[v.counterpart].kinds) <= set(v.kinds)


def test_the_flop_estimate_counts_what_a_loop_computes() -> None:
    from reference.realshape import timing
    from reference.zoo import shapes

    model = shapes.tiny("dit")
    inputs = shapes.example_inputs(model)
    one = timing.loop_gflops(timing.denoising_loop(model, inputs, 1))
    three = timing.loop_gflops(timing.denoising_loop(model, inputs, 3))
    assert one > 0 and three == pytest.approx(3 * one, rel=1e-9)


@pytest.mark.parametrize(
    ("kind", "technique"), [("dit", "forecasting"), ("dit", "first-block-cache")]
)
def test_a_counterpart_computes_what_our_technique_computes_in_the_loop(
    kind: str, technique: str
) -> None:
    """The counterpart timed beside a technique runs the same schedule: the loops' outputs agree
    (first-block caching bit for bit, forecasting within float32 rounding, see the tests of the
    production shapes), and a second run of each starts afresh."""
    import copy

    from reference.realshape import timing, variants
    from reference.zoo import shapes

    model = shapes.tiny(kind)
    inputs = shapes.example_inputs(model)
    ours_v = variants.VARIANTS[technique]
    theirs_v = variants.COUNTERPARTS[str(ours_v.counterpart)]
    ours = timing.denoising_loop(ours_v.apply(copy.deepcopy(model), inputs), inputs, 6)
    theirs_m = theirs_v.apply(copy.deepcopy(model), inputs)
    theirs = timing.denoising_loop(theirs_m, inputs, 6, theirs_v.around)
    first, again = ours(), ours()
    assert torch.equal(first, again)
    # Both forecast the same order-1 polynomial from the same computed calls; the node differences
    # (timesteps 999 -> 0 in fifths) are not powers of two, so each side rounds them differently
    # in float32 (unit roundoff 6e-8), and the later network calls of the loop amplify that.
    # Measured: 3e-5 of max|x|; a wrong schedule (a forecast at another call) differs by 3e-2.
    tol = 1e-3 * float(first.abs().max())
    assert (first - theirs()).abs().max() <= tol
    assert (theirs() - first).abs().max() <= tol  # a second run starts afresh
    plain = timing.denoising_loop(model, inputs, 6)
    assert timing.loop_gflops(ours) < timing.loop_gflops(plain)  # calls were skipped


@pytest.fixture(scope="module")
def quick(
    tmp_path_factory: pytest.TempPathFactory, quick_study: Any
) -> tuple[dict[str, Any], Path]:
    return quick_study(STUDY.package, tmp_path_factory.mktemp("realshape"))


@pytest.mark.slow
def test_quick_study_times_every_technique_and_counterpart_where_they_apply(
    quick: tuple[dict[str, Any], Path],
) -> None:
    from reference.harness.integrity import read_checked
    from reference.realshape import variants

    data, path = quick
    ids = {r["id"] for r in data["rows"]}
    expected = {f"{m}.baseline-{g}" for m in bench.QUICK.models for g in (1, 2, 3)}
    for m in bench.QUICK.models:
        for pairs in variants.timed(bench.MODELS[m], bench.QUICK.techniques):
            expected |= {f"{m}.{n}" for pair in pairs for n in pair if n}
    assert ids == expected and path.is_file()
    assert read_checked(path)[1] == []  # every figure recomputes from the raw rounds
    assert data["schema_version"] == 4 and not data["standard"]
    for row in data["rows"]:
        v = row["values"]
        assert len(row["rounds"]["latency_ms"]) == bench.QUICK.repeats
        if row["role"] == "baseline":
            assert v["latency_ms"] > 0 and v["gflops"] > 0
            continue
        lo, hi = row["intervals"]["speedup"]
        assert lo <= v["speedup"] <= hi and v["latency_ms"] > 0
        if row["config"]["method"] in ("deepcache", "forecasting", "taylorseer"):
            assert v["flop_speedup"] > 1  # skipped calls count no FLOPs
        if row["config"]["method"] == "cfg":
            assert v["flop_speedup"] == pytest.approx(0.5, rel=0.05)  # two rows per call
    with_counterpart = [r for r in data["rows"] if "vs_counterpart" in r["values"]]
    assert len(data["aims"]) == len(with_counterpart) == 5  # 2 forecasting, FBC, fusion, compile
    assert {a["against"].split(".", 1)[1] for a in data["aims"]} == set(variants.COUNTERPARTS)


def test_a_hand_edited_counterpart_ratio_is_named(quick: tuple[dict[str, Any], Path]) -> None:
    import copy

    from reference.harness import integrity

    data = copy.deepcopy(quick[0])
    row = next(r for r in data["rows"] if "vs_counterpart" in r["values"])
    row["values"]["vs_counterpart"] *= 2
    data = integrity.seal(data)  # a forger who recomputes the digest
    problems = integrity.audit(data).problems
    assert any(p.startswith(f"rows[{row['id']}].values.vs_counterpart: recorded") for p in problems)


@pytest.mark.slow
def test_the_study_page_and_the_technique_pages_show_it_in_three_languages(
    quick: tuple[dict[str, Any], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from glossary.loader import load_glossary
    from glossary.site import context, results
    from glossary.site.compare import compare_page
    from glossary.site.studies import TECHNIQUE_OF, realshape_lines, study_page

    assert set(TECHNIQUE_OF) == set(bench.TECHNIQUES)  # every timed technique has its entry
    fixtures = Path(__file__).parent / "fixtures" / "site"
    monkeypatch.syspath_prepend(str(fixtures))
    ctx = context.Context(
        glossary=load_glossary(fixtures / "entries"),
        results=results.load_results(quick[1].parent, allow_nonstandard=True),
        module_exists=lambda module: False,
    )
    assert "realshape" in ctx.results.composites
    for lang in ("es", "ru", "en"):
        page = study_page("realshape", lang, ctx)
        assert "glossary bench realshape" in page and "(realshape.md)" in compare_page(lang, ctx)
        assert "page.intro" not in page and "model.sd15" not in page
        shown = [line for line in page.splitlines() if "`models=" not in line]  # settings: code
        assert not any("sd15" in line for line in shown)  # the model is named in words
        lines = realshape_lines("feature-caching", lang, ctx)
        rows = [line for line in lines if line.startswith("- ")]
        # DeepCache on the U-Net; first-block caching on the DiT, with diffusers' beside it
        assert "../realshape.md" in lines[0] and len(rows) == 3
        assert "page.technique-row" not in rows[0] and "×" in rows[0]
        assert "diffusers" in rows[2] and "page.technique-counterpart" not in rows[2]
        two = realshape_lines("conv-fusion", lang, ctx)  # both models, diffusers on the U-Net
        assert len([line for line in two if line.startswith("- ")]) == 3
    assert realshape_lines("gradient-checkpointing", "en", ctx) == []  # not timed there


@pytest.mark.parametrize("kind", ["unet2d-condition", "dit"])
def test_variants_that_share_weights_leave_the_untouched_model_as_it_was(kind: str) -> None:
    """A hook, wrapper or compiled region applied to a weight-sharing copy writes no weight: the
    untouched model's outputs and tensors are bitwise what they were."""
    from reference.realshape import timing, variants
    from reference.zoo import shapes

    model = shapes.tiny(kind)
    inputs = shapes.example_inputs(model)
    before = timing.denoising_loop(model, inputs, 6)()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    shared = {**variants.VARIANTS, **variants.COUNTERPARTS}
    for name, v in shared.items():
        if v.shares_weights and kind in v.kinds and name not in ("compile", "compile-repeated"):
            copy = timing.copy_for(model, shares_weights=True)
            assert next(copy.parameters()) is next(model.parameters())  # shared, not copied
            timing.denoising_loop(v.apply(copy, inputs), inputs, 6, v.around)()
    assert torch.equal(timing.denoising_loop(model, inputs, 6)(), before)
    assert all(torch.equal(t, state[k]) for k, t in model.state_dict().items())


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal where CUDA is absent")
def test_a_cuda_run_is_refused_in_one_line_where_there_is_no_cuda(
    capsys: pytest.CaptureFixture,
) -> None:
    """The accelerator study's default device is checked like a given one, before any model."""
    GPU_STUDY = next(s for s in STUDIES if s.slug == "realshape-gpu")

    assert study_main(STUDY, ["--bench", "--device", "cuda"]) == 2
    assert study_main(GPU_STUDY, ["--bench"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and all("no CUDA device is available" in line for line in lines)


def test_the_accelerator_study_shares_the_comparison_and_changes_the_configuration() -> None:
    from reference.realshape_gpu import bench as gpu

    assert gpu.CONTRACT == bench.CONTRACT and gpu.measure is bench.measure
    assert (gpu.FULL.device, gpu.FULL.dtype, gpu.FULL.side) == ("cuda", "bfloat16", 64)
    assert gpu.QUICK.device == "cpu"  # its tests run anywhere
    with pytest.raises(ValueError, match="device must be one of"):
        bench.Config(device="tpu").validate()


@pytest.mark.skipif(torch.cuda.is_available(), reason="the skip applies where CUDA is absent")
def test_glossary_bench_leaves_the_accelerator_study_out_without_cuda(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """Run with no study named, the accelerator study says why it does not run; named, it is
    refused like any bad option (exit 2)."""
    from glossary import cli

    ran: list[str] = []
    monkeypatch.setattr(cli, "_bench_study", lambda name, rest: ran.append(name) or 0)
    monkeypatch.setattr(cli, "bench_techniques", lambda kept: 0)
    assert cli.cmd_bench([]) == 0
    assert "realshape-gpu" not in ran and "realshape" in ran
    assert "realshape-gpu: not run: it needs a CUDA device" in capsys.readouterr().out
    ran.clear()
    assert cli.cmd_bench(["--check"]) == 0
    assert "realshape-gpu" in ran  # its committed result (or its pending state) is checked


def test_a_weight_rewriting_technique_is_prepared_in_float32_and_placed_like_the_model() -> None:
    """In bfloat16, pruning is applied to a float32 CPU copy and the result cast back; the
    untouched model keeps its weights and dtype."""
    from reference.realshape import timing, variants
    from reference.zoo import shapes

    cfg = bench.Config(side=8, dtype="bfloat16", real=False)
    base = timing.place(shapes.build("unet2d-condition", real=False, sample_size=8), cfg)
    before = [p.clone() for p in base.parameters()]
    inputs = timing.loop_inputs(base, cfg)
    pruned = timing.applied(variants.VARIANTS["pruning"], base, inputs)
    assert {p.dtype for p in pruned.parameters()} == {torch.bfloat16}
    assert sum(p.numel() for p in pruned.parameters()) < sum(p.numel() for p in before)
    assert all(torch.equal(a, b) for a, b in zip(before, base.parameters(), strict=True))
    out = timing.denoising_loop(pruned, inputs, 3)()
    assert out.dtype == torch.bfloat16 and torch.isfinite(out.float()).all()


def test_the_accelerator_study_borrows_the_real_shape_words_but_not_the_title() -> None:
    from glossary.resulttext import ResultText

    for lang in ("es", "ru", "en"):
        gpu, cpu = ResultText("realshape-gpu", lang), ResultText("realshape", lang)
        assert gpu.title() != cpu.title() and "GPU" in gpu.title()
        assert gpu.message("note.groups") == cpu.message("note.groups") != "note.groups"
