"""The other routes to a ported benchmark: ``glossary run`` and ``glossary bench``.

``glossary run`` runs the fake technique's ``__main__`` (`reference.harness.entry.main`);
``glossary bench`` sends a technique whose ``bench.py`` declares ``CONTRACT = 2`` to
`reference.harness.entry` and every other one to the old runner, as before.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from glossary_support import copy_valid, edit, use_registry

from glossary import cli
from reference import registry
from reference.harness import entry

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def fake_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Entries whose ``pruning`` runs the fake package ``entry_fake`` (contract 2)."""
    monkeypatch.syspath_prepend(str(FIXTURES))
    monkeypatch.setattr(entry, "target_of", lambda p: entry.Target("fake-tech", p, None))
    monkeypatch.setattr(entry, "set_threads", lambda n: None)
    d = copy_valid(tmp_path)
    use_registry(monkeypatch, tmp_path, {"pruning": "entry_fake"})
    edit(d, "pruning", "module: reference.pruning", "module: entry_fake")
    yield d
    for name in [m for m in sys.modules if m == "entry_fake" or m.startswith("entry_fake.")]:
        del sys.modules[name]


def test_glossary_run_checks_a_ported_technique_before_any_work(
    capsys: pytest.CaptureFixture[str], fake_entries: Path, tmp_path: Path
) -> None:
    code, out, err = run(capsys, "--entries", str(fake_entries), "run", "pruning", "--seeds", "1,1")
    assert (code, out) == (2, "")
    assert err == "python -m entry_fake: error: argument --seeds: a value is given twice in '1,1'\n"
    bench = sys.modules["entry_fake.bench"]
    assert bench.CALLS == []
    demo = tmp_path / "demo"
    code, out, err = run(
        capsys, "--entries", str(fake_entries), "run", "pruning", "--out", str(demo)
    )
    assert (code, err) == (0, "") and out.startswith("row 0 of the fake demo\n")
    assert [c[0] for c in bench.CALLS] == ["demo"] and demo.is_dir()


def _result(slug: str) -> dict[str, Any]:
    return {"slug": slug, "headline": {"speedup": 1.5}, "anomalies": [], "aims": []}


@pytest.fixture
def routes(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """The entry and the result check record what they are given."""
    import reference.harness.runner as runner

    seen: dict[str, list[Any]] = {"checked": [], "prepared": [], "ran": []}
    monkeypatch.setattr(runner, "check", lambda slugs: seen["checked"].append(slugs) or 0)

    def prepare(slug: str, **kwargs: Any) -> Any:
        seen["prepared"].append((slug, kwargs))
        if kwargs["out"] is not None:
            raise entry.UsageError("--out: refused for the test")
        return SimpleNamespace(target=SimpleNamespace(slug=slug))

    def run_bench(p: Any) -> tuple[dict[str, Any], Path]:
        seen["ran"].append(p.target.slug)
        if p.target.slug == "fail":
            raise RuntimeError("measured nothing\nsecond line")
        return _result(p.target.slug), Path(f"/results/{p.target.slug}.json")

    monkeypatch.setattr(entry, "prepare_standard", prepare)
    monkeypatch.setattr(entry, "run_bench", run_bench)
    return seen


def test_glossary_bench_hands_the_techniques_to_the_entry(
    capsys: pytest.CaptureFixture[str], routes: dict[str, list[Any]]
) -> None:
    code, out, err = run(capsys, "bench", "pruning", "feature-caching", "--quick")
    assert (code, err) == (0, "")
    kwargs = {"quick": True, "threads": None, "out": None}
    assert routes["prepared"] == [("pruning", kwargs), ("feature-caching", kwargs)]
    assert routes["ran"] == ["pruning", "feature-caching"]
    header, first, second, legend = out.splitlines()
    assert header.startswith("technique") and "aims:" in legend
    assert first.startswith("pruning") and second.startswith("feature-caching")
    assert first.endswith("/results/pruning.json")


def test_glossary_bench_of_every_technique_runs_them_all_or_checks_them(
    capsys: pytest.CaptureFixture[str],
    routes: dict[str, list[Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cli, "FIRST_STUDIES", ())
    monkeypatch.setattr(cli, "LAST_STUDIES", ())
    assert run(capsys, "bench", "--threads", "1")[0] == 0
    assert routes["ran"] == registry.slugs() and routes["checked"] == []
    assert {kwargs["threads"] for _, kwargs in routes["prepared"]} == {1}
    routes["ran"].clear()
    assert run(capsys, "bench", "--quick", "--check")[0] == 0
    assert routes["checked"] == [registry.slugs()] and routes["ran"] == []


def test_glossary_bench_checks_every_plan_first_and_reports_failures_in_one_line(
    capsys: pytest.CaptureFixture[str],
    routes: dict[str, list[Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, out, err = run(capsys, "bench", "pruning", "feature-caching", "--out", "/x")
    assert (code, out) == (2, "") and err == "glossary: --out: refused for the test\n"
    assert routes["ran"] == []  # nothing ran: every plan is checked first
    failing = SimpleNamespace(target=SimpleNamespace(slug="fail"))
    monkeypatch.setattr(entry, "prepare_standard", lambda slug, **kwargs: failing)
    code, out, err = run(capsys, "bench", "pruning")
    assert (code, out) == (1, "")
    assert err == "glossary bench: fail failed: RuntimeError: measured nothing\n"


def test_contract_version_reads_the_bench_without_importing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    versions = {s: entry.contract_version(s) for s in registry.slugs()}
    ported = {s for s, v in versions.items() if v == 2}
    assert {
        "mixture-of-experts",
        "gradient-checkpointing",
        "tpu-deployment",
        "grid-search",
    } <= ported
    assert set(versions.values()) == {2}  # every benchmark declares its comparison
    folder = tmp_path / "feature_caching"
    folder.mkdir()
    (folder / "bench.py").write_text("import torch\nCONTRACT = 2\nraise SystemExit('imported')\n")
    monkeypatch.setattr(registry, "REFERENCE_DIR", tmp_path)
    assert entry.contract_version("feature-caching") == 2
    assert entry.contract_version("pruning") == 1  # no bench.py there


@pytest.mark.parametrize(
    ("signum", "code", "said"),
    [
        (signal.SIGINT, 130, "glossary: interrupted\n"),
        (signal.SIGTERM, 143, "glossary bench: terminated\n"),
    ],
)
def test_a_signal_during_glossary_bench_unwinds_the_ported_run(
    capsys: pytest.CaptureFixture[str],
    routes: dict[str, list[Any]],
    monkeypatch: pytest.MonkeyPatch,
    signum: int,
    code: int,
    said: str,
) -> None:
    unwound: list[bool] = []

    def interrupted_run(p: Any) -> None:
        try:
            os.kill(os.getpid(), signum)
            for _ in range(500):  # the handler runs at the next bytecode boundary
                time.sleep(0.01)
        finally:
            unwound.append(True)  # where the staging folder is removed

    monkeypatch.setattr(entry, "run_bench", interrupted_run)
    before = signal.getsignal(signum)
    assert run(capsys, "bench", "pruning") == (code, "", said)
    assert unwound == [True] and signal.getsignal(signum) == before
