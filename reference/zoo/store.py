"""Where zoo weights live and how they are verified: manifest, sha256, safetensors."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import torch

ZOO_DIR = Path(__file__).resolve().parent
"""The committed zoo: ``manifest.json`` and ``weights/*.safetensors``."""
MANIFEST_NAME = "manifest.json"
WEIGHTS_SUBDIR = "weights"
MANIFEST_FORMAT = 1


LOADED_WEIGHTS: dict[Path, str] = {}
"""Every weight file this process has verified for loading, with its sha256 (in load order).

The harness records it in each result's provenance: a result covers exactly the weights the
benchmark loaded, not a list written by hand (see `reference.harness.provenance`)."""


class ZooError(RuntimeError):
    """A zoo model cannot be loaded (missing/corrupted file, unknown name). One-line message."""


def rebuild_command(name: str) -> str:
    return f"python scripts/train_zoo.py --only {name}"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def manifest_path(zoo_dir: Path | None = None) -> Path:
    return (zoo_dir or ZOO_DIR) / MANIFEST_NAME


def read_manifest(zoo_dir: Path | None = None) -> dict[str, Any]:
    """The manifest as a dict ``{"format": 1, "models": {name: entry}}`` (empty if absent)."""
    path = manifest_path(zoo_dir)
    if not path.exists():
        return {"format": MANIFEST_FORMAT, "models": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ZooError(f"{path}: unreadable zoo manifest ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise ZooError(f"{path}: zoo manifest has no 'models' mapping")
    return data


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically with the project's one writer
    (`glossary.safewrite.atomic_write_bytes`: temporary file in the same folder, fsync,
    mode kept, rename)."""
    from glossary.safewrite import atomic_write_bytes as write

    path.parent.mkdir(parents=True, exist_ok=True)
    write(path, data)


def update_manifest(name: str, entry: dict[str, Any], zoo_dir: Path | None = None) -> None:
    """Set ``models[name] = entry`` and rewrite the manifest atomically (sorted, indented).

    The read-modify-write runs under an exclusive ``flock`` on the zoo folder, so two training
    processes that finish at the same time do not lose each other's entries.
    """
    import fcntl

    zoo_dir = zoo_dir or ZOO_DIR
    zoo_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(zoo_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        data = read_manifest(zoo_dir)
        data["format"] = MANIFEST_FORMAT
        data["models"][name] = entry
        data["models"] = dict(sorted(data["models"].items()))
        text = json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n"
        atomic_write_bytes(manifest_path(zoo_dir), text.encode("utf-8"))
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


STORAGE_DTYPES = {"float32": torch.float32, "float16": torch.float16}


def save_weights(module: torch.nn.Module, path: Path, storage_dtype: str = "float32") -> str:
    """Save ``module.state_dict()`` as safetensors (atomically); return the file's sha256.

    Floating-point tensors are stored as ``storage_dtype`` (see ``ZooSpec.storage_dtype``).
    """
    from safetensors.torch import save

    if storage_dtype not in STORAGE_DTYPES:
        raise ZooError(f"{path}: unknown storage dtype {storage_dtype!r}; use float32 or float16")
    dtype = STORAGE_DTYPES[storage_dtype]
    state = {
        k: (v.to(dtype) if v.is_floating_point() else v).detach().contiguous().clone()
        for k, v in module.state_dict().items()
    }
    atomic_write_bytes(path, save(state))
    return sha256_file(path)


def verified_weights(name: str, zoo_dir: Path | None = None) -> tuple[dict[str, Any], Path]:
    """Return ``(manifest entry, weight path)`` after checking existence and sha256."""
    zoo_dir = zoo_dir or ZOO_DIR
    entry = read_manifest(zoo_dir)["models"].get(name)
    if entry is None:
        raise ZooError(
            f"zoo model {name!r} is not in {manifest_path(zoo_dir)}; "
            f"rebuild with: {rebuild_command(name)}"
        )
    (file_name, expected), *_ = entry["weights"].items()
    path = zoo_dir / WEIGHTS_SUBDIR / file_name
    if not path.is_file():
        raise ZooError(f"{path}: zoo weight file is missing; rebuild with: {rebuild_command(name)}")
    actual = sha256_file(path)
    if actual != expected["sha256"]:
        raise ZooError(
            f"{path}: sha256 {actual[:12]}... does not match the manifest "
            f"({expected['sha256'][:12]}...); rebuild with: {rebuild_command(name)}"
        )
    LOADED_WEIGHTS[path.resolve()] = actual
    return entry, path


def load_state_dict(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(path))
