"""The parts every production adapter shares: the run handle, the timestep reader, the checks."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from reference.harness.production import (
    RunHandle,
    UnsupportedModel,
    checked_denoiser,
    refuse_kwargs,
    timestep_reader,
)


class _Net(nn.Module):
    def forward(self, sample: torch.Tensor, timestep: torch.Tensor, extra: object = None) -> object:
        return sample


def test_run_handle_counts_calls_and_resets_when_the_timestep_goes_up() -> None:
    forgotten: list[int] = []
    handle = RunHandle(_Net(), "demo", _forget=lambda: forgotten.append(1))
    assert [handle.begin_call(t) for t in (999.0, 500.0, 1.0)] == [0, 1, 2]
    handle.end_call(True)
    handle.end_call(False)
    assert handle.state["full_calls"] == 1 and handle.state["computed"] is False
    assert handle.begin_call(999.0) == 0  # a larger timestep: a new sampling run
    assert forgotten == [1] and handle.state["full_calls"] == 0
    assert handle.begin_call(None) == 1  # no timestep: counted, never a reset
    assert forgotten == [1]


def test_removing_a_run_handle_forgets_its_state() -> None:
    forgotten: list[int] = []
    handle = RunHandle(_Net(), "demo", _forget=lambda: forgotten.append(1))
    handle.remove()
    assert forgotten == [1] and handle.removed


def test_timestep_reader_reads_keyword_positional_and_batched_timesteps() -> None:
    read = timestep_reader(_Net())
    x = torch.zeros(2, 1)
    assert read((x,), {"timestep": torch.tensor([7.0, 7.0])}) == 7.0
    assert read((x, torch.tensor(5)), {}) == 5.0
    assert read((x,), {}) is None


def test_refuse_kwargs_names_the_first_argument_passed() -> None:
    refuse_kwargs({"a": None, "b": 1}, ("a",), "demo")  # None is not passed
    with pytest.raises(ValueError, match=r"^demo: b is not supported$"):
        refuse_kwargs({"a": None, "b": 1}, ("a", "b"), "demo")


def test_checked_denoiser_refuses_before_anything_changes() -> None:
    net = _Net()
    assert checked_denoiser(net, ("_Net",), 1, int, "demo") is net
    with pytest.raises(UnsupportedModel, match="demo does not support _Net"):
        checked_denoiser(net, ("Other",), 1, int, "demo")
    with pytest.raises(TypeError, match="demo: expected a str, got int"):
        checked_denoiser(net, ("_Net",), 1, str, "demo")
