"""LoRA adapters on a vLLM service (issue 35): the agents stack's two adapters plan; their config
is refused at its paths; the fit counts vLLM's preallocated buffers; the entrypoint stages each
adapter and passes flags vLLM 0.33.0's parser accepts; the task role reads the adapter prefixes
only."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ecs_inference import iam
from ecs_inference.contracts import engine as engine_contract
from ecs_inference.contracts import flag_table
from ecs_inference.contracts import vllm as vllm_contract
from ecs_inference.engines import vllm as vllm_engine
from ecs_inference.engines.base import check_extra_args
from ecs_inference.engines.vllm import VllmLaunch, VllmSettings
from ecs_inference.sizing import catalog, lora
from tests.contracts.test_staging import FakeS3
from tests.engines.checks import inputs_of
from tests.images.engine_images import IMAGES, load_script, printed_command, value_after
from tests.stack_config import DELETE, issues_of, mutate, plan_of, reference

STACK = "agents"
MODEL = "platform.models.llama"
WEIGHTS = "s3://example-agents-models/llama-3.1-8b-instruct/"
ENTRYPOINT = IMAGES / "vllm" / "entrypoint.py"


def _adapters(raw: dict[str, Any]) -> list[dict[str, Any]]:
    return raw["models"]["llama"]["adapters"]


def _issues(raw: dict[str, Any]) -> dict[str, str]:
    return {i.path: i.message for i in issues_of(raw, STACK)}


def test_the_reference_service_serves_two_adapters() -> None:
    plan = plan_of(reference(STACK), STACK)
    llama = plan.models["llama"]
    launch = llama.launch
    assert isinstance(launch, VllmLaunch)
    assert launch.adapter_names == ("llama-3.1-8b-sql", "llama-3.1-8b-support")
    assert (launch.lora.max_loras, launch.lora.max_lora_rank) == (2, 16)
    assert llama.launch.adapter_prefixes == (
        "adapters/llama-3.1-8b-sql",
        "adapters/llama-3.1-8b-support",
    )
    lines = plan.decisions["model llama"]
    assert any(line.startswith("LoRA: 2 adapter(s), 2 GPU slot(s) at rank 16") for line in lines)
    assert "+ LoRA 0.17 GiB (2 slots x rank 16)" in lines[0]


# --------------------------------------------------------------------------------------------
# refused at their config paths
# --------------------------------------------------------------------------------------------


def test_wrong_base_model_and_rank_are_refused_at_their_paths_together() -> None:
    raw = reference(STACK)
    second = {**_adapters(raw)[1], "baseModel": "s3://example-agents-models/qwen2.5-7b/"}
    second["rank"] = 32
    issues = _issues(mutate(raw, "models.llama.adapters", [_adapters(raw)[0], second]))
    assert "not this service's model" in issues[f"{MODEL}.adapters[1].baseModel"]
    assert WEIGHTS in issues[f"{MODEL}.adapters[1].baseModel"]
    assert "above maxLoraRank 16" in issues[f"{MODEL}.adapters[1].rank"]
    assert not any(p.startswith(f"{MODEL}.adapters[0]") for p in issues)


def test_rank_within_a_raised_maximum_passes_and_the_maximum_is_vllms_set() -> None:
    raw = mutate(reference(STACK), "models.llama.adapters", [])
    raw = mutate(raw, "models.llama.maxLoraRank", 24)  # not one of vLLM's ranks
    assert f"{MODEL}.maxLoraRank" in _issues(raw)
    raw = reference(STACK)
    raw = mutate(raw, "models.llama.adapters", [{**_adapters(raw)[0], "rank": 64}])
    assert f"{MODEL}.adapters[0].rank" in _issues(raw)
    plan = plan_of(mutate(raw, "models.llama.maxLoraRank", 64), STACK)
    assert "rank 64" in plan.decisions["model llama"][1]


def test_rank_set_is_the_flag_tables_choices() -> None:
    table = json.loads(
        (Path(flag_table.__file__).parent / "flags" / "vllm-0.33.0.json").read_text()
    )
    (row,) = [f for f in table["flags"] if f["options"] == ["--max-lora-rank"]]
    assert [int(c) for c in row["choices"]] == list(lora.MAX_LORA_RANKS)
    assert lora.DEFAULT_MAX_LORA_RANK in lora.MAX_LORA_RANKS


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("source", "s3://another-bucket/adapters/sql/", "weights' bucket example-agents-models"),
        ("source", "https://huggingface.co/x/y", "S3 URI"),
        ("name", "llama-3.1-8b", "already the name of this service's model"),
        ("name", "llama-3.1-8b-support", "already the name"),
        ("name", "bad name", "1-128 characters"),
    ],
)
def test_adapter_fields_are_checked(field: str, value: str, fragment: str) -> None:
    raw = reference(STACK)
    first = {**_adapters(raw)[0], field: value}
    issues = _issues(mutate(raw, "models.llama.adapters", [first, _adapters(raw)[1]]))
    index = 1 if value == "llama-3.1-8b-support" else 0
    assert fragment in issues[f"{MODEL}.adapters[{index}].{field}"]


def test_cpu_cache_below_the_batch_slots_is_refused() -> None:
    raw = mutate(reference(STACK), "models.llama.maxCpuLoras", 1)
    assert "below maxLoras 2" in _issues(raw)[f"{MODEL}.maxCpuLoras"]


def test_other_engines_refuse_adapters_naming_the_engine_that_serves_them() -> None:
    raw = reference(STACK)
    raw = mutate(raw, "models.llama-neuron.adapters", _adapters(raw))
    message = _issues(raw)["platform.models.llama-neuron.adapters"]
    assert message == "`adapters` applies to engine vllm, not neuron"


# --------------------------------------------------------------------------------------------
# the fit counts the adapters
# --------------------------------------------------------------------------------------------


def _vllm_buffer_elements(
    arch: catalog.ModelArchitecture, shape: tuple[int, int, int], rank: int, slots: int, tp: int
) -> int:
    """The LoRA tensors vLLM 0.33.0 allocates on one GPU, listed as its `create_lora_weights`
    shapes them (default, not fully sharded), for a Llama-style decoder."""
    h, i, vocab = shape
    q = arch.attention_heads * arch.head_dim // tp
    kv = max(arch.kv_heads // tp, 1) * arch.head_dim
    tensors: list[tuple[int, ...]] = []
    for _ in range(arch.layers):
        # qkv_proj: MergedQKVParallelLinearWithLoRA, one A per slice on the full input
        tensors += [(slots, 1, rank, h)] * 3 + [(slots, 1, out, rank) for out in (q, kv, kv)]
        # o_proj: RowParallelLinearWithLoRA, A on the input partition, B on the full output
        tensors += [(slots, 1, rank, q), (slots, 1, h, rank)]
        # gate_up_proj: MergedColumnParallelLinearWithLoRA, two slices
        tensors += [(slots, 1, rank, h)] * 2 + [(slots, 1, i // tp, rank)] * 2
        # down_proj: RowParallelLinearWithLoRA
        tensors += [(slots, 1, rank, i // tp), (slots, 1, h, rank)]
    tensors += [(slots, vocab, rank), (slots, 1, h, rank)]  # embed_tokens
    tensors += [(slots, 1, rank, h), (slots, 1, vocab, rank)]  # lm_head (logits processor)
    total = 0
    for dims in tensors:
        size = 1
        for d in dims:
            size *= d
        total += size
    return total


@pytest.mark.parametrize("name", ["llama-3.1-8b", "qwen2.5-7b", "llama-3.1-70b"])
@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_buffer_bytes_match_the_tensors_vllm_allocates(name: str, tp: int) -> None:
    arch = catalog.architecture(name)
    slots = VllmSettings.model_validate({"maxLoras": 3, "maxLoraRank": 32})
    shape = lora.lora_shape(name, None)
    need = lora.LoraNeed(slots, arch, shape)
    expected = _vllm_buffer_elements(arch, shape, 32, 3, tp) * 2
    assert need.per_gpu_gib(tp) * 2**30 == pytest.approx(expected, rel=1e-12)


def test_adapters_push_a_fitting_model_over_its_gpu_with_the_numbers() -> None:
    raw = mutate(reference(STACK), "models.llama.maxConcurrentSequences", 18)
    plan_of(mutate(raw, "models.llama.adapters", []), STACK)  # fits without adapters
    raw = mutate(raw, "models.llama.maxLoraRank", 256)
    raw = mutate(raw, "models.llama.maxLoras", 4)
    message = _issues(raw)[MODEL]
    assert "+ LoRA 5.5: 4 adapter slots at rank 256" in message
    assert "40.5 usable GiB" in message
    # the suggested fixes leave room for the adapters' buffers
    assert "maxConcurrentSequences" in message


def test_a_model_whose_lora_shape_is_unknown_is_refused() -> None:
    raw = reference(STACK)
    raw = mutate(raw, "models.llama.architecture", DELETE)
    raw = mutate(
        raw,
        "models.llama.parameters",
        {"paramsBillion": 8, "layers": 32, "attentionHeads": 32, "kvHeads": 8, "headDim": 128},
    )
    raw = mutate(raw, "models.llama.maxModelLen", 8192)
    assert "parameters.hiddenSize" in _issues(raw)[MODEL]
    shape = {"hiddenSize": 4096, "intermediateSize": 14336, "vocabSize": 128256}
    for key, value in shape.items():
        raw = mutate(raw, f"models.llama.parameters.{key}", value)
    plan = plan_of(raw, STACK)
    assert "+ LoRA 0.17 GiB" in plan.decisions["model llama"][0]


# --------------------------------------------------------------------------------------------
# the image: flags, staging
# --------------------------------------------------------------------------------------------


def _adapter(name: str, source: str, rank: int) -> dict[str, Any]:
    return {"name": name, "source": source, "baseModel": "s3://models/llama/", "rank": rank}


ADAPTERS = [
    _adapter("llama-sql", "s3://models/adapters/sql/", 16),
    _adapter("org/llama-support", "s3://models/adapters/support/", 8),
]


def _launch(**settings: Any) -> VllmLaunch:
    lora = {"adapters": ADAPTERS, "maxLoras": 2} | settings
    return VllmLaunch(
        inputs_of("vllm", name="llama", weightsUri="s3://models/llama/", maxModelLen=8192, **lora)
    )


def test_adapter_flags_are_ones_vllm_0_33_parses(vllm_gpu_flags) -> None:
    launch = _launch()
    argv = printed_command(ENTRYPOINT, launch.container_environment())
    assert vllm_gpu_flags.problems(argv[2:]) == []
    assert "--enable-lora" in argv
    assert value_after(argv, "--max-loras") == "2"
    assert value_after(argv, "--max-lora-rank") == "16"
    assert value_after(argv, "--max-cpu-loras") == "2"
    start = argv.index("--lora-modules") + 1
    modules = [json.loads(v) for v in argv[start : start + 2]]
    # LoRAParserAction: an item with a comma is JSON, read as LoRAModulePath(**item)
    assert modules == [
        {
            "name": "llama-sql",
            "path": f"{vllm_contract.ADAPTERS_DIR}/0",
            "base_model_name": "llama",
        },
        {
            "name": "org/llama-support",
            "path": f"{vllm_contract.ADAPTERS_DIR}/1",
            "base_model_name": "llama",
        },
    ]
    without = printed_command(ENTRYPOINT, _launch(adapters=[]).container_environment())
    assert not [a for a in without if "lora" in a]


def test_lora_flags_are_the_platforms_own() -> None:
    table = flag_table.load(vllm_engine.FLAG_TABLE)
    with pytest.raises(ValueError, match="--max-loras"):
        check_extra_args("x", ("--max-loras", "4"), table, vllm_engine.MANAGED_FLAGS)


def test_settings_refuse_a_rank_vllm_does_not_know_or_an_adapter_above_it() -> None:
    with pytest.raises(ValueError, match="maxLoraRank"):
        _launch(maxLoraRank=24)
    problems = VllmSettings.model_validate({"adapters": ADAPTERS, "maxLoraRank": 8}).problems(
        "s3://models/llama/", "llama"
    )
    assert problems == [(("adapters", 0, "rank"), problems[0][1])]
    assert "rank 16 is above maxLoraRank 8" in str(problems[0][1])


def _entrypoint() -> ModuleType:
    return load_script("vllm_entrypoint", ENTRYPOINT)


def _env() -> dict[str, str]:
    return {e["name"]: e["value"] for e in _launch().container_environment()}


def _bucket(sql_rank: int = 16) -> dict[str, bytes]:
    return {
        "adapters/sql/adapter_config.json": json.dumps({"r": sql_rank}).encode(),
        "adapters/sql/adapter_model.safetensors": b"x" * 10,
        "adapters/support/adapter_config.json": json.dumps({"r": 8}).encode(),
        "adapters/support/adapter_model.safetensors": b"y" * 10,
        "adapters/support-old/adapter_config.json": b"{}",  # a sibling the prefix must not match
    }


def test_entrypoint_stages_each_adapter_where_vllm_looks(tmp_path: Path) -> None:
    s3 = FakeS3({"models": _bucket()})
    assert _entrypoint().stage_adapters(_env(), s3, tmp_path) == 4
    assert (tmp_path / "0" / "adapter_model.safetensors").read_bytes() == b"x" * 10
    assert (tmp_path / "1" / "adapter_model.safetensors").read_bytes() == b"y" * 10
    assert not any("support-old" in key for key in s3.downloads)


def test_entrypoint_refuses_an_adapter_of_another_rank_or_without_its_config(
    tmp_path: Path,
) -> None:
    module = _entrypoint()
    with pytest.raises(module.WeightsError, match="has rank 64, but the service declares rank 16"):
        module.stage_adapters(_env(), FakeS3({"models": _bucket(sql_rank=64)}), tmp_path / "a")
    bucket = {k: v for k, v in _bucket().items() if k != "adapters/support/adapter_config.json"}
    with pytest.raises(module.WeightsError, match=r"no readable PEFT adapter_config\.json"):
        module.stage_adapters(_env(), FakeS3({"models": bucket}), tmp_path / "b")


# --------------------------------------------------------------------------------------------
# the task role reads the adapters' prefixes, and only those
# --------------------------------------------------------------------------------------------


def test_the_task_role_reads_every_adapter_the_launch_stages() -> None:
    # the service's task role is granted the launch's adapter prefixes (ModelDecisions)
    assert _launch().adapter_prefixes == ("adapters/sql", "adapters/support")


def test_policy_grants_exactly_the_adapter_prefixes() -> None:
    doc = json.loads(
        iam.s3_read_policy("models", "llama", extra_prefixes=("adapters/sql", "adapters/support"))
    )
    read, listing = doc["Statement"]
    assert read["Resource"] == [
        "arn:aws:s3:::models/llama/*",
        "arn:aws:s3:::models/adapters/sql/*",
        "arn:aws:s3:::models/adapters/support/*",
    ]
    assert listing["Condition"]["StringLike"]["s3:prefix"] == [
        "llama",
        "llama/*",
        "adapters/sql",
        "adapters/sql/*",
        "adapters/support",
        "adapters/support/*",
    ]
    with pytest.raises(iam.PolicyArgumentError):
        iam.s3_read_policy("models", "llama", extra_prefixes=("adapters/*",))


def test_the_image_contract_declares_the_adapter_reads_the_rehearsal_checks() -> None:
    calls = engine_contract.aws_calls(_env())
    resources = {(c.action, c.resource) for c in calls}
    assert ("s3:GetObject", "arn:{partition}:s3:::models/adapters/sql/adapter_config.json") in (
        resources
    )
    listed = {dict(c.context).get("s3:prefix") for c in calls if c.action == "s3:ListBucket"}
    assert listed == {"llama/", "adapters/sql/", "adapters/support/"}


def test_the_rehearsal_fails_a_task_role_without_the_adapter_grant(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The agents stack previews clean with its adapters (the reference-stack rehearsal test);
    with the task role's adapter prefixes dropped, the rehearsal names each denied read."""
    from tools.preview import EXIT_OK, run_preview

    real = iam.s3_read_policy

    def without_adapters(*args: Any, **kwargs: Any) -> str:
        return real(*args, **{**kwargs, "extra_prefixes": ()})

    monkeypatch.setattr(iam, "s3_read_policy", without_adapters)
    result = run_preview(STACK, policy_pack=None)
    assert result.exit_code != EXIT_OK
    denied = [f.message for f in result.findings if "stage a LoRA adapter" in f.message]
    assert len(denied) == 4, denied  # list + read, per adapter
    assert all("is denied to role inference-llama-task" in m for m in denied)
