"""``python scripts/train_zoo.py``: train zoo models, write weights + manifest, draw sample grids.

Examples:

    python scripts/train_zoo.py                       # the whole zoo (dependencies first)
    python scripts/train_zoo.py --only teacher,dit    # some models
    python scripts/train_zoo.py --only vae --steps 5 --out /tmp/zoo --no-grid   # smoke test

A run interrupted (Ctrl-C) resumes from the last checkpoint in the cache folder
(``.zoo-cache/`` by default, ``OUT/.cache`` with ``--out``) when started again with the same
arguments.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from .specs import SPECS, ZooSpec, load_extensions
from .store import WEIGHTS_SUBDIR, ZOO_DIR, ZooError, save_weights, update_manifest
from .training import TrainContext

REPO_ROOT = ZOO_DIR.parents[1]
DEFAULT_CACHE = REPO_ROOT / ".zoo-cache"
DEFAULT_THREADS = 2
GRID_MODELS = ("teacher", "dit", "latent_teacher")


def _load(name: str, zoo_dir: Path) -> torch.nn.Module:
    """A trained dependency from the zoo folder being written (`reference.zoo.load`)."""
    from . import load

    return load(name, zoo_dir=zoo_dir)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="train_zoo.py", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME[,NAME]",
        help="models to train (default: all; --list shows them)",
    )
    p.add_argument("--steps", type=int, default=None, help="override every model's step count")
    p.add_argument("--out", type=Path, default=None, help=f"zoo folder (default: {ZOO_DIR})")
    p.add_argument("--cache", type=Path, default=None, help="checkpoint folder for resuming")
    p.add_argument("--threads", type=int, default=DEFAULT_THREADS, help="torch threads")
    p.add_argument("--checkpoint-every", type=int, default=250, metavar="K")
    p.add_argument("--no-grid", action="store_true", help="skip the sample grid PNGs")
    p.add_argument("--no-progress", action="store_true", help="no tqdm progress bars")
    p.add_argument("--list", action="store_true", help="list the models and their manifest facts")
    return p


def _selected(only: list[str]) -> list[str]:
    load_extensions()
    names = [n.strip() for item in only for n in item.split(",") if n.strip()]
    unknown = [n for n in names if n not in SPECS]
    if unknown:
        raise ZooError(f"--only: unknown zoo model {unknown[0]!r}; known: {', '.join(SPECS)}")
    return [n for n in SPECS if not names or n in names]


def _versions() -> dict[str, str]:
    import diffusers

    return {
        "torch": torch.__version__,
        "diffusers": diffusers.__version__,
        "python": platform.python_version(),
    }


def train_one(
    spec: ZooSpec,
    *,
    zoo_dir: Path,
    cache_dir: Path,
    steps: int | None,
    threads: int,
    checkpoint_every: int,
    progress: bool,
    command: str,
) -> dict[str, Any]:
    """Train ``spec``, save its weights into ``zoo_dir`` and update the manifest; return entry."""
    from .store import verified_weights

    for dep in spec.requires:
        verified_weights(dep, zoo_dir)  # raises ZooError naming the missing dependency
    torch.set_num_threads(threads)
    ctx = TrainContext(
        spec=spec,
        steps=steps if steps is not None else spec.steps,
        batch=spec.batch,
        lr=spec.lr,
        seed=spec.seed,
        zoo_dir=zoo_dir,
        cache_dir=cache_dir,
        checkpoint_every=checkpoint_every,
        progress=progress,
        config=dict(spec.config),
        loader=_load,
    )
    start = time.perf_counter()
    torch.manual_seed(spec.seed)  # the initial weights; each step reseeds (see training.py)
    outcome = spec.train_model(ctx)
    file_name = f"{spec.name}.safetensors"
    path = zoo_dir / WEIGHTS_SUBDIR / file_name
    digest = save_weights(outcome.model, path, spec.storage_dtype)
    entry: dict[str, Any] = {
        "description": spec.description,
        "architecture": spec.architecture,
        "config": {**ctx.config, **outcome.config_updates},
        "params": sum(p.numel() for p in outcome.model.parameters()),
        "weights": {file_name: {"sha256": digest, "bytes": path.stat().st_size}},
        "seed": ctx.seed,
        "steps": ctx.steps,
        "batch": ctx.batch,
        "lr": ctx.lr,
        "hparams": spec.hparams,
        "storage_dtype": spec.storage_dtype,
        "optimizer": "AdamW, linear warm-up + cosine decay to 0.1x, grad-norm clip 1.0",
        "final_loss": round(outcome.final_loss, 6),
        "train_seconds": round(ctx.train_seconds, 1),
        "wall_seconds": round(time.perf_counter() - start, 1),
        "threads": threads,
        "command": command,
        **_versions(),
        "extra": outcome.extra,
    }
    update_manifest(spec.name, entry, zoo_dir)
    return entry


def zoo_table(zoo_dir: Path) -> str:
    """A plain-text table of the registered models and their manifest facts."""
    from .store import read_manifest

    models = read_manifest(zoo_dir)["models"]
    load_extensions()
    lines = [f"{'model':18} {'class':32} {'params':>10} {'MB':>6} {'steps':>6} {'train s':>8} loss"]
    for name, spec in SPECS.items():
        e, cls = models.get(name), spec.architecture.rsplit(".", 1)[-1]
        if e is None:
            lines.append(f"{name:18} {cls:32} (not trained)")
            continue
        size = sum(w["bytes"] for w in e["weights"].values()) / 2**20
        lines.append(
            f"{name:18} {cls:32} {e['params']:>10,} {size:6.2f} "
            f"{e['steps']:>6} {e['train_seconds']:>8.0f} {e['final_loss']:.4f}"
        )
    return "\n".join(lines)


def main(
    argv: list[str] | None = None,
    command: str | None = None,
    draw: Callable[[str, Path], Path] | None = None,
) -> int:
    """Train the selected models; ``draw(name, zoo_dir)`` writes a sample grid of each image
    model (passed in by ``scripts/train_zoo.py``: the grid samples with the harness, which sits
    above the zoo, so the zoo does not import it)."""
    args = _parser().parse_args(argv)
    if args.list:
        print(zoo_table(args.out or ZOO_DIR))
        return 0
    argv_list = sys.argv[1:] if argv is None else list(argv)
    command = command or " ".join(["python", "scripts/train_zoo.py", *argv_list])
    zoo_dir = (args.out or ZOO_DIR).resolve()
    cache_dir = args.cache or (zoo_dir / ".cache" if args.out else DEFAULT_CACHE)
    if args.steps is not None and args.steps < 1:
        print("train_zoo: --steps must be >= 1", file=sys.stderr)
        return 2
    try:
        names = _selected(args.only)
        for name in names:
            entry = train_one(
                SPECS[name],
                zoo_dir=zoo_dir,
                cache_dir=cache_dir,
                steps=args.steps,
                threads=args.threads,
                checkpoint_every=args.checkpoint_every,
                progress=not args.no_progress,
                command=command,
            )
            print(
                f"{name}: {entry['params']:,} params, loss {entry['final_loss']:.4f}, "
                f"{entry['train_seconds']:.0f} s -> {zoo_dir / WEIGHTS_SUBDIR}"
            )
            if draw is not None and name in GRID_MODELS and not args.no_grid:
                print(f"  samples: {draw(name, zoo_dir)}")
    except ZooError as exc:
        print(f"train_zoo: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("train_zoo: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    return 0
