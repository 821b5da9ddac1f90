"""A model that does not fit its pool's type is told the settings that make it fit that type
first, with the numbers, then bigger types; each setting, applied as the message says, plans."""

from __future__ import annotations

import re

import pytest

from ecs_inference import sizing
from ecs_inference.sizing.gpu import fit_changes
from tests.sizing.needs import memory_need
from tests.stack_config import issues_of, mutate, plan_of, reference


def _changes(message: str) -> list[dict[str, int | str]]:
    """The settings of `to fit <type>, change one of: a 1; b x with c 2 (...)`, as a user reads
    them."""
    clause = message.split("change one of: ", 1)[1].split("; or else", 1)[0]
    found = []
    for item in clause.split("; "):
        settings = {}
        for part in re.sub(r" \(.*\)$", "", item).split(" with "):
            key, value = part.split(" ")
            settings[key] = int(value) if value.isdigit() else value
        found.append(settings)
    return found


@pytest.mark.parametrize(
    ("edits", "expected"),
    [
        # The issue's case: 32 sequences of 32k tokens on one L40S.
        (
            {"maxModelLen": 32768, "maxConcurrentSequences": 32},
            [
                {"maxConcurrentSequences": 5},
                {"kvCacheDtype": "fp8", "maxConcurrentSequences": 10},
                {"maxModelLen": 5120},
            ],
        ),
        # Weights that do not fit in 16 bits but do quantised.
        (
            {"architecture": "qwen2.5-32b", "maxModelLen": 4096, "maxConcurrentSequences": 4},
            None,
        ),
    ],
)
def test_each_setting_offered_makes_the_model_fit_its_pool_type(edits, expected) -> None:
    raw = reference("dev")
    for key, value in edits.items():
        raw = mutate(raw, f"models.llama.{key}", value)
    [issue] = [i for i in issues_of(raw, "dev") if i.path == "platform.models.llama"]
    assert "to fit g6e.xlarge, change one of: " in issue.message, issue.message
    # The model's own settings come before bigger instance types.
    assert issue.message.index("change one of") < issue.message.index("or else")
    offered = _changes(issue.message)
    if expected is not None:
        assert offered == expected
    assert offered
    for change in offered:
        fixed = raw
        for key, value in change.items():
            fixed = mutate(fixed, f"models.llama.{key}", value)
        plan = plan_of(fixed, "dev")
        assert "llama" in plan.models, change


def test_quantised_weights_are_offered_when_only_they_fit() -> None:
    need = memory_need("llama-3.1-70b", max_model_len=4096, max_concurrent_sequences=4)
    usable = sizing.catalog.instance("g6e.12xlarge").accelerator_memory_gib * 0.9
    offered = [c.settings for c in fit_changes(need, usable, [1, 2, 4])]
    assert {"dtype": "fp8"} in offered
    assert not any("maxConcurrentSequences" in c and len(c) == 1 for c in offered)


def test_a_pinned_tensor_parallel_size_is_offered_the_one_that_fits() -> None:
    need = memory_need("llama-3.1-8b", max_model_len=8192, max_concurrent_sequences=64)
    inst = sizing.catalog.instance("g6e.12xlarge")
    with pytest.raises(sizing.SizingError) as error:
        sizing.choose_tensor_parallel(need, inst, tensor_parallel_size=1)
    assert "tensorParallelSize 4 (from 1)" in str(error.value)


def test_weights_too_big_for_the_type_say_so_before_the_types_that_fit() -> None:
    need = memory_need("llama-3.1-70b", max_model_len=8192, max_concurrent_sequences=8)
    with pytest.raises(sizing.SizingError) as error:
        sizing.choose_tensor_parallel(need, "g5.xlarge")
    message = str(error.value)
    assert "no setting of the model alone makes it fit g5.xlarge; or else cheapest" in message
