"""How ``glossary lookup``, ``validate`` and the site build scale with the number of entries.

Usage::

    python scripts/bench_lookup_scale.py [--sizes 1 10 25] [-n 15] [--site] [--entries DIR]

For each size factor k, a temporary folder gets the real entries plus k-1 generated variants of
each one: slug ``<slug>-v<i>``, every term and alias with a made-up word appended (names stay
unique per language, as the validator demands), related links and ``one_way`` marks mapped to
the same variant, text and sources unchanged; a technique's variant is a concept without a
``reference`` (the technique registry gives each package to one slug only). Then, in fresh
processes (``python -m glossary.cli --entries DIR``), it reports medians over ``-n`` runs of:

* ``index``: compiling the folder's shipped index (``python -m glossary.index DIR``, once), as
  the wheel build does;
* ``cold``: an empty-cache lookup (``GLOSSARY_CACHE=0``) served by the shipped index. The entry
  files' mtimes are bumped after compiling, so every run digests every file, as after
  installing a wheel with caching off (the worst case);
* ``warm``: a lookup with a private cache folder after a first run (which digested the files
  once and remembered their stamps);
* ``no index``: the first lookup when nothing is compiled yet (it compiles the index into the
  cache folder: the one-time cost an edited checkout pays), one run;
* ``validate``: ``glossary validate DIR`` (all checks, house style included), one run per size
  above 1x;
* ``site`` (only with ``--site``; minutes at 25x): ``mkdocs build`` of a copy of ``site_src``
  with ``GLOSSARY_ENTRIES_DIR`` pointing at the folder, one run (``--site-results DIR`` picks the
  benchmark results it renders, e.g. an empty folder).

The processes run a snapshot of the ``glossary`` and ``reference`` code copied at the start
(``PYTHONPATH``), from the temporary folder: edits made meanwhile in the checkout cannot change
the code under test half-way (which would also invalidate the compiled indexes).

Lookups use an on-topic query ("poda") and an off-topic one ("chocolate cake", which scores
every name). Each cell is wall / CPU seconds: on a shared machine the CPU time is the steadier
figure. The aim is lookups at 25x within 1.5x of 1x. The script reports; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SYLLABLES = ["ka", "lo", "mir", "ten", "vu", "sa", "dro", "pel", "zin", "bor", "que", "ny"]
QUERIES = ("poda", "chocolate cake")


def word(i: int) -> str:
    """A made-up word, different for each i ("kalo", "mirten", ...)."""
    rng = random.Random(i)
    return "".join(rng.choice(SYLLABLES) for _ in range(3)) + str(i)


def variant(data: dict, i: int) -> dict:
    data = json.loads(json.dumps(data))
    tag = word(i)

    def slug(s: str) -> str:
        return f"{s}-v{i}"

    data["slug"] = slug(data["slug"])
    if data.get("reference"):  # only the registered slug may name a technique's package
        data["kind"] = "concept"
        del data["reference"]
    data["related"] = [slug(s) for s in data.get("related", [])]
    if data.get("one_way"):
        data["one_way"] = [slug(s) for s in data["one_way"]]
    for block in data["lang"].values():
        block["term"] = f"{block['term']} {tag}"
        block["aliases"] = [f"{a} {tag}" for a in block["aliases"]]
    return data


def generate(source: Path, target: Path, factor: int) -> int:
    import yaml

    target.mkdir(parents=True)
    files = sorted(source.glob("*.yaml"))
    for path in files:
        shutil.copy2(path, target / path.name)
        if factor == 1:
            continue
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for i in range(1, factor):
            v = variant(data, i)
            text = yaml.safe_dump(v, allow_unicode=True, sort_keys=False, width=100)
            (target / f"{v['slug']}.yaml").write_text(text, encoding="utf-8")
    return len(files) * factor


def run(args: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    cwd = cwd or Path(env.get("PYTHONPATH", ROOT)).parent  # not the checkout: its code may change
    proc = subprocess.run(
        args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        sys.exit(f"bench: {' '.join(args)} exited {proc.returncode}: {proc.stderr[-500:]!r}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def median_of(n: int, args: list[str], env: dict[str, str]) -> tuple[float, float]:
    run(args, env)  # page cache, .pyc files, a first digest check: not counted
    runs = [run(args, env) for _ in range(n)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def bump_mtimes(directory: Path) -> None:
    later = time.time() + 5
    for path in directory.glob("*.yaml"):
        os.utime(path, (later, later))


def snapshot_code(target: Path) -> Path:
    """Copy the glossary and reference packages (code, catalogs; no weights) to ``target``."""
    keep = shutil.ignore_patterns("__pycache__", "*.safetensors", "*.png", "weights", "*.sqlite3")
    for package in ("glossary", "reference"):
        shutil.copytree(ROOT / package, target / package, ignore=keep)
    return target


def site_build(
    entries: Path, work: Path, env: dict[str, str], results: Path | None
) -> tuple[float, float]:
    """``mkdocs build`` in a folder holding a copy of site_src and links to the code snapshot."""
    site = work / f"site-{entries.name}"
    site.mkdir()
    shutil.copytree(ROOT / "site_src", site / "site_src")
    shutil.copy2(ROOT / "mkdocs.yml", site / "mkdocs.yml")
    for package in ("glossary", "reference"):
        (site / package).symlink_to(work / "code" / package, target_is_directory=True)
    env = dict(env, GLOSSARY_ENTRIES_DIR=str(entries), NO_MKDOCS_2_WARNING="1")
    if results is not None:
        env["GLOSSARY_RESULTS_DIR"] = str(results)
    cmd = [sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(site / "out")]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=site, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        sys.exit(f"bench: site build at {entries.name} failed: {last}")
    return elapsed, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 25])
    p.add_argument("-n", type=int, default=15, help="runs per lookup median (default 15)")
    p.add_argument("--site", action="store_true", help="also time a site build (slow)")
    p.add_argument(
        "--site-results",
        type=Path,
        metavar="DIR",
        help="benchmark results folder for the site build (GLOSSARY_RESULTS_DIR; an empty "
        "folder builds the term pages without result sections)",
    )
    p.add_argument("--entries", type=Path, default=ROOT / "glossary" / "entries")
    args = p.parse_args(argv)
    py = [sys.executable, "-m", "glossary.cli"]
    rows = []
    with tempfile.TemporaryDirectory(prefix="glossary-scale-") as tmp:
        work = Path(tmp)
        code = snapshot_code(work / "code")
        base_env = dict(os.environ, PYTHONDONTWRITEBYTECODE="0", PYTHONPATH=str(code))
        for k in args.sizes:
            entries = work / f"x{k}"
            n_entries = generate(args.entries, entries, k)
            compile_cmd = [sys.executable, "-m", "glossary.index", str(entries)]
            row = {"k": k, "entries": n_entries}
            row["index"] = run(compile_cmd, dict(base_env, GLOSSARY_CACHE="0"))
            bump_mtimes(entries)
            cold_env = dict(base_env, GLOSSARY_CACHE="0")
            warm_env = dict(base_env, GLOSSARY_CACHE_DIR=str(work / f"cache{k}"))
            for q in QUERIES:
                cmd = [*py, "--entries", str(entries), "lookup", q]
                row[f"cold {q}"] = median_of(args.n, cmd, cold_env)
                row[f"warm {q}"] = median_of(args.n, cmd, warm_env)
            (entries / "_index.sqlite3").unlink()
            fresh_env = dict(base_env, GLOSSARY_CACHE_DIR=str(work / f"fresh{k}"))
            row["no index"] = run([*py, "--entries", str(entries), "lookup", "poda"], fresh_env)
            validate = [*py, "validate", str(entries)]
            row["validate"] = (
                median_of(3, validate, base_env) if k == 1 else run(validate, base_env)
            )
            if args.site:
                row["site"] = site_build(entries, work, base_env, args.site_results)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    keys = [key for key in rows[0] if key not in ("k", "entries")]
    print(
        f"load average {os.getloadavg()[0]:.2f}; medians of {args.n} fresh processes, "
        "wall / CPU (user+system) seconds"
    )
    print("| size | entries | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 2) + "|")
    for row in rows:
        cells = [f"{row[key][0]:.3f} / {row[key][1]:.3f}" for key in keys]
        print(f"| {row['k']}x | {row['entries']} | " + " | ".join(cells) + " |")
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        for key in keys:
            if key.startswith(("cold", "warm")):
                wall, cpu = (last[key][i] / first[key][i] for i in (0, 1))
                print(f"{key}: {last['k']}x / {first['k']}x = {wall:.2f} wall, {cpu:.2f} CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
