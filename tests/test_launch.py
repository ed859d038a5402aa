"""``python -m reference.<package>`` from its first line: importing a technique package loads
nothing heavy, and a Ctrl-C while the command line loads is one line and exit 130, for every
package with a ``__main__`` (the 15 techniques, the studies, the stacking study)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reference.registry import REFERENCE_DIR, TECHNIQUES

ROOT = REFERENCE_DIR.parent
MAIN_PACKAGES = sorted(f"reference.{p.parent.name}" for p in REFERENCE_DIR.glob("*/__main__.py"))


def test_every_runnable_package_is_found() -> None:
    assert {t.package for t in TECHNIQUES} <= set(MAIN_PACKAGES)
    assert {"reference.stacking", "reference.realshape", "reference.baseline_sanity"} <= set(
        MAIN_PACKAGES
    )


@pytest.mark.parametrize("package", [t.package for t in TECHNIQUES])
def test_a_technique_package_imports_without_torch_and_exports_what_it_names(
    package: str,
) -> None:
    code = (
        "import importlib, sys\n"
        f"m = importlib.import_module({package!r})\n"
        "assert 'torch' not in sys.modules, sorted(k for k in sys.modules if 'torch' in k)[:3]\n"
        "print(len(m.__all__))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert run.returncode == 0, run.stderr
    module = importlib.import_module(package)
    submodules = {p.stem for p in Path(module.__file__).parent.glob("*.py")}
    exported = set(module.__all__)
    from reference.lazy import exports_of

    declared = exports_of(str(module.__file__))
    assert not declared or set(declared) == exported  # the TYPE_CHECKING block is the table
    assert not exported & submodules  # a submodule import would shadow the lazy attribute
    for name in sorted(exported):
        assert getattr(module, name) is not None, name
    with pytest.raises(AttributeError, match="has no attribute"):
        module.no_such_name  # noqa: B018


@pytest.mark.parametrize("package", MAIN_PACKAGES)
def test_sigint_while_the_command_line_loads_is_one_line_and_130(
    package: str, tmp_path: Path
) -> None:
    # ``argparse``, imported by every command line and not by Python's start-up or by a lazy
    # package, stands in for any module loading when Ctrl-C arrives: it sends a real SIGINT.
    (tmp_path / "argparse.py").write_text(
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(30)\n",
        encoding="utf-8",
    )
    prelude = (
        "import signal, sys, runpy\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})\n"
        f"sys.path[:0] = [{str(tmp_path)!r}, {str(ROOT)!r}]\n"
        f"sys.argv = ['-m', '--help']\n"
        f"runpy.run_module({package!r}, run_name='__main__', alter_sys=True)\n"
    )
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    run = subprocess.run(
        [sys.executable, "-I", "-c", prelude],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert (run.returncode, run.stdout, run.stderr) == (
        130,
        "",
        f"python -m {package}: interrupted\n",
    )
