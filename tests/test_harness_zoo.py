"""The committed zoo: loading, integrity checks, the teacher's sample quality, training runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from reference import zoo
from reference.harness import quality as Q
from reference.harness.sampling import class_labels, make_noise, model_eps_fn, sample
from reference.zoo import cli
from reference.zoo.store import read_manifest, sha256_file

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("zoo")]


def copy_zoo(tmp_path: Path, *names: str) -> Path:
    dest = tmp_path / "zoo"
    (dest / "weights").mkdir(parents=True)
    shutil.copy(zoo.ZOO_DIR / "manifest.json", dest / "manifest.json")
    for name in names:
        (file_name,) = zoo.manifest_entry(name)["weights"]
        shutil.copy(zoo.ZOO_DIR / "weights" / file_name, dest / "weights" / file_name)
    return dest


def test_manifest_covers_every_model_with_matching_files() -> None:
    models = read_manifest()["models"]
    builtin = zoo.model_names(include_extensions=False)
    assert set(builtin) <= set(models)
    total = 0
    for name in builtin:
        entry = models[name]
        for file_name, meta in entry["weights"].items():
            path = zoo.ZOO_DIR / "weights" / file_name
            assert sha256_file(path) == meta["sha256"]
            total += path.stat().st_size
        assert entry["command"].startswith("python scripts/train_zoo.py")
        assert {"seed", "steps", "batch", "lr", "final_loss", "train_seconds", "torch"} <= set(
            entry
        )
    every_file = {f for entry in models.values() for f in entry["weights"]}
    on_disk = {p.name for p in (zoo.ZOO_DIR / "weights").glob("*.safetensors")}
    assert on_disk == every_file  # no stray or unlisted weight file is committed
    all_bytes = sum((zoo.ZOO_DIR / "weights" / f).stat().st_size for f in every_file)
    assert total <= all_bytes < 26_000_000  # the whole zoo, technique students included
    assert zoo.weight_files("teacher") == [zoo.ZOO_DIR / "weights" / "teacher.safetensors"]
    teacher = models["teacher"]
    assert teacher["extra"]["scheduler"] == zoo.teacher_scheduler_config()


def test_every_model_loads_in_eval_mode() -> None:
    x = torch.zeros(2, 1, 16, 16)
    t = torch.tensor([10, 500])
    y = torch.tensor([3, 10])
    with torch.no_grad():
        assert zoo.load_teacher()(x, t, class_labels=y).sample.shape == x.shape
        assert zoo.load_dit()(x, t, class_labels=y).sample.shape == x.shape
        classifier = zoo.load_classifier()
        assert classifier.features(x).shape == (2, 64) and classifier(x).shape == (2, 10)
        assert zoo.load_noisy_classifier()(x, t).shape == (2, 10)
        vae = zoo.load_vae()
        z = zoo.encode_images(vae, x)
        assert z.shape == (2, 4, 4, 4) and zoo.decode_latents(vae, z).shape == x.shape
        latent = zoo.load_latent_teacher()
        assert latent(z, t, class_labels=y).sample.shape == z.shape
    assert not zoo.load_teacher().training


def test_a_corrupted_weight_file_is_rejected_with_its_name(tmp_path: Path) -> None:
    dest = copy_zoo(tmp_path, "classifier")
    path = dest / "weights" / "classifier.safetensors"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(zoo.ZooError) as info:
        zoo.load_classifier(dest)
    message = str(info.value)
    assert "classifier.safetensors" in message and "sha256" in message
    assert "python scripts/train_zoo.py --only classifier" in message
    assert "\n" not in message


def test_a_missing_weight_file_is_rejected_with_its_name(tmp_path: Path) -> None:
    dest = copy_zoo(tmp_path)
    with pytest.raises(zoo.ZooError, match=r"teacher\.safetensors: zoo weight file is missing"):
        zoo.load_teacher(dest)
    with pytest.raises(zoo.ZooError, match="unknown zoo model 'nope'"):
        zoo.load("nope")


def test_teacher_ddim50_samples_are_digits() -> None:
    n = 200
    labels = class_labels(n)
    teacher = zoo.load_teacher()
    x = sample(model_eps_fn(teacher), zoo.teacher_scheduler(), make_noise(n, 0), labels=labels)
    fdd = Q.frechet_digits_distance(x)
    assert fdd < Q.fdd_ceiling(n) / 10
    assert Q.class_accuracy(x, labels) > 0.7


def test_training_with_few_steps_writes_weights_and_manifest(tmp_path: Path) -> None:
    out = tmp_path / "zoo"
    argv = ["--only", "classifier,vae,latent_teacher,teacher", "--steps", "2"]
    argv += ["--out", str(out), "--no-grid", "--no-progress", "--threads", "1"]
    assert cli.main(argv) == 0
    models = read_manifest(out)["models"]
    assert list(models) == ["classifier", "latent_teacher", "teacher", "vae"]
    for name, entry in models.items():
        (file_name,) = entry["weights"]
        assert entry["steps"] == 2 and entry["threads"] == 1
        assert sha256_file(out / "weights" / file_name) == entry["weights"][file_name]["sha256"]
        assert zoo.load(name, out) is not None
    assert models["vae"]["config"]["scaling_factor"] > 0
    assert models["teacher"]["command"].endswith("--threads 1")


def test_a_missing_dependency_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--only", "latent_teacher", "--steps", "1", "--out", str(tmp_path), "--no-grid"]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "vae" in err[0] and "--only vae" in err[0]
    assert cli.main(["--only", "nonsense"]) == 1
    assert "unknown zoo model 'nonsense'" in capsys.readouterr().err


def test_an_interrupted_run_resumes_to_identical_weights(tmp_path: Path) -> None:
    from reference.zoo import training

    spec = zoo.SPECS["classifier"]

    def run(cache: Path, interrupt_at: int | None) -> dict[str, torch.Tensor]:
        ctx = training.TrainContext(
            spec, steps=6, batch=16, lr=1e-3, seed=0, zoo_dir=tmp_path, cache_dir=cache,
            checkpoint_every=2, progress=False, config=dict(spec.config),
        )  # fmt: skip
        torch.manual_seed(0)
        model = spec.build_model()
        x = torch.randn(64, 1, 16, 16, generator=torch.Generator().manual_seed(1))
        y = torch.arange(64) % 10

        def batch_loss(m: torch.nn.Module, step: int) -> torch.Tensor:
            if step == interrupt_at:
                raise KeyboardInterrupt
            idx = torch.randint(64, (16,))
            return torch.nn.functional.cross_entropy(m(x[idx]), y[idx])

        trained, _ = training.fit(ctx, model, batch_loss)
        return trained.state_dict()

    straight = run(tmp_path / "a", None)
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "b", interrupt_at=5)  # checkpoint at step 4 survives
    resumed = run(tmp_path / "b", None)
    for key, value in straight.items():
        # exact: the same ops, data and restored RNG/optimizer state, in one process
        assert torch.equal(value, resumed[key]), key


def test_technique_modules_extend_the_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reference.zoo import specs

    package = tmp_path / "fake_zoo_ext.py"
    package.write_text(
        "from reference.zoo.specs import SPECS, ZooSpec\n"
        "ZOO_SPECS = {'fake_student': ZooSpec('fake_student', 'd', 'a', {}, "
        "build='torch.nn:Identity', train='x:y', steps=1, batch=1, lr=0.1)}\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(specs, "zoo_extension_modules", lambda: ["fake_zoo_ext"])
    monkeypatch.setattr(specs, "SPECS", dict(specs.SPECS))
    monkeypatch.setattr(specs, "_LOADED_EXTENSIONS", set())
    monkeypatch.setattr(zoo, "SPECS", specs.SPECS)
    names = list(specs.load_extensions())
    assert names[: len(specs.BUILTIN_MODELS)] == list(specs.BUILTIN_MODELS)
    assert names[-1] == "fake_student" and list(specs.load_extensions()) == names
    with pytest.raises(zoo.ZooError, match="fake_student"):
        zoo.load("fake_student", tmp_path)  # registered, but never trained
    monkeypatch.setattr(specs, "zoo_extension_modules", lambda: ["reference.not_written"])
    with pytest.raises(zoo.ZooError, match=r"reference\.not_written"):
        specs.load_extensions()  # a registered module that is missing is an error, not skipped
