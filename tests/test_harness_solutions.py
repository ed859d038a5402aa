"""The converged solution kept under a content key (`reference.harness.solutions`): computed once
per content, recomputed when any input changes, never a half-written or foreign file."""

from __future__ import annotations

import torch

from reference.harness import ode, solutions


class _Toy(torch.nn.Module):
    """A denoiser of the zoo's call shape whose ε is a fixed linear map of x_t."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor(scale))

    def forward(self, x, t, class_labels=None, return_dict=False):
        return (self.w * x,)


def _counting(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = ode.solution

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(ode, "solution", counted)
    return calls


def test_a_solution_is_solved_once_and_read_back_identical(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(solutions.CACHE_ENV, str(tmp_path))
    calls = _counting(monkeypatch)
    model, noise = _Toy(0.5), torch.randn(3, 1, 4, 4, generator=torch.Generator().manual_seed(0))
    first = solutions.solution(model, noise, steps=3)
    again = solutions.solution(model, noise, steps=3)
    assert len(calls) == 1 and torch.equal(first, again)
    # the CPU solver is deterministic: a fresh solve gives the same bits as the stored one
    assert torch.equal(first, ode.solution(solutions.sampling.model_eps_fn(model), noise, steps=3))
    assert [p.suffix for p in tmp_path.iterdir()] == [".pt"]


def test_any_changed_input_is_a_different_key(tmp_path) -> None:
    model, noise = _Toy(0.5), torch.randn(3, 1, 4, 4, generator=torch.Generator().manual_seed(0))
    key = solutions.content_key(model, noise, None, 1.0, True, 200)
    changed = [
        solutions.content_key(_Toy(0.25), noise, None, 1.0, True, 200),
        solutions.content_key(model, noise + 1e-6, None, 1.0, True, 200),
        solutions.content_key(model, noise, torch.arange(3), 1.0, True, 200),
        solutions.content_key(model, noise, None, 2.0, True, 200),
        solutions.content_key(model, noise, None, 1.0, False, 200),
        solutions.content_key(model, noise, None, 1.0, True, 199),
    ]
    assert key == solutions.content_key(_Toy(0.5), noise.clone(), None, 1.0, True, 200)
    assert len({key, *changed}) == 1 + len(changed)


def test_an_unreadable_file_is_solved_again_and_replaced(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(solutions.CACHE_ENV, str(tmp_path))
    calls = _counting(monkeypatch)
    model, noise = _Toy(0.5), torch.randn(2, 1, 4, 4, generator=torch.Generator().manual_seed(1))
    path = tmp_path / f"{solutions.content_key(model, noise, None, 1.0, True, 3)}.pt"
    path.write_bytes(b"half a file")
    x = solutions.solution(model, noise, steps=3)
    assert len(calls) == 1 and torch.equal(torch.load(path, weights_only=True), x)
