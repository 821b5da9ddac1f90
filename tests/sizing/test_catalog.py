"""The catalog tables against the published facts they were copied from (DESIGN §4, EC2 instance
pages, each model's config.json, the ECS task-size table), plus the lookup helpers."""

from __future__ import annotations

import pytest

from ecs_inference.contracts import aws_limits
from ecs_inference.sizing import catalog

# name: (accelerator, count, marketing GB each, vCPU, memory GiB, NeuronCores)
PUBLISHED_INSTANCE_FACTS = {
    "g5.xlarge": ("nvidia", 1, 24, 4, 16, 0),
    "g5.2xlarge": ("nvidia", 1, 24, 8, 32, 0),
    "g5.4xlarge": ("nvidia", 1, 24, 16, 64, 0),
    "g5.8xlarge": ("nvidia", 1, 24, 32, 128, 0),
    "g5.16xlarge": ("nvidia", 1, 24, 64, 256, 0),
    "g5.12xlarge": ("nvidia", 4, 24, 48, 192, 0),
    "g5.24xlarge": ("nvidia", 4, 24, 96, 384, 0),
    "g5.48xlarge": ("nvidia", 8, 24, 192, 768, 0),
    "g6.xlarge": ("nvidia", 1, 24, 4, 16, 0),
    "g6.2xlarge": ("nvidia", 1, 24, 8, 32, 0),
    "g6.4xlarge": ("nvidia", 1, 24, 16, 64, 0),
    "g6.8xlarge": ("nvidia", 1, 24, 32, 128, 0),
    "g6.16xlarge": ("nvidia", 1, 24, 64, 256, 0),
    "g6.12xlarge": ("nvidia", 4, 24, 48, 192, 0),
    "g6.24xlarge": ("nvidia", 4, 24, 96, 384, 0),
    "g6.48xlarge": ("nvidia", 8, 24, 192, 768, 0),
    "g6e.xlarge": ("nvidia", 1, 48, 4, 32, 0),
    "g6e.2xlarge": ("nvidia", 1, 48, 8, 64, 0),
    "g6e.4xlarge": ("nvidia", 1, 48, 16, 128, 0),
    "g6e.8xlarge": ("nvidia", 1, 48, 32, 256, 0),
    "g6e.16xlarge": ("nvidia", 1, 48, 64, 512, 0),
    "g6e.12xlarge": ("nvidia", 4, 48, 48, 384, 0),
    "g6e.24xlarge": ("nvidia", 4, 48, 96, 768, 0),
    "g6e.48xlarge": ("nvidia", 8, 48, 192, 1536, 0),
    "p4d.24xlarge": ("nvidia", 8, 40, 96, 1152, 0),
    "p4de.24xlarge": ("nvidia", 8, 80, 96, 1152, 0),
    "p5.4xlarge": ("nvidia", 1, 80, 16, 256, 0),
    "p5.48xlarge": ("nvidia", 8, 80, 192, 2048, 0),
    "p5e.48xlarge": ("nvidia", 8, 141, 192, 2048, 0),
    "inf2.xlarge": ("neuron", 1, 32, 4, 16, 2),
    "inf2.8xlarge": ("neuron", 1, 32, 32, 128, 2),
    "inf2.24xlarge": ("neuron", 6, 32, 96, 384, 12),
    "inf2.48xlarge": ("neuron", 12, 32, 192, 768, 24),
    "trn1.2xlarge": ("neuron", 1, 32, 8, 32, 2),
    "trn1.32xlarge": ("neuron", 16, 32, 128, 512, 32),
}


def test_catalog_holds_exactly_the_published_types():
    assert set(catalog.INSTANCE_TYPES) == set(PUBLISHED_INSTANCE_FACTS)


@pytest.mark.parametrize("name", sorted(PUBLISHED_INSTANCE_FACTS))
def test_instance_matches_published_facts(name):
    accel, count, gb, vcpu, mem, cores = PUBLISHED_INSTANCE_FACTS[name]
    inst = catalog.instance(name)
    assert (inst.accelerator, inst.accelerator_count, inst.accelerator_memory_gb) == (
        accel,
        count,
        gb,
    )
    assert (inst.vcpu, inst.memory_gib, inst.neuron_cores) == (vcpu, mem, cores)
    assert inst.family == name.split(".")[0]
    assert inst.on_demand_usd_hour > 0


# Driver-reported totals (nvidia-smi MiB) converted to GiB: the convention sizing relies on.
@pytest.mark.parametrize(
    ("name", "gib"),
    [
        ("g5.xlarge", 23028 / 1024),
        ("g6.xlarge", 23034 / 1024),
        ("g6e.xlarge", 46068 / 1024),
        ("p4d.24xlarge", 40.0),
        ("p4de.24xlarge", 80.0),
        ("p5.48xlarge", 81559 / 1024),
        ("p5e.48xlarge", 143771 / 1024),
        ("inf2.xlarge", 32.0),
        ("trn1.32xlarge", 32.0),
    ],
)
def test_accelerator_memory_is_driver_reported_gib(name, gib):
    assert catalog.instance(name).accelerator_memory_gib == pytest.approx(gib)


def test_gpu_gib_never_exceeds_the_marketing_figure_in_bytes_by_more_than_ecc_rounding():
    # A GPU sold as "N GB" must not be sized as holding more than ~N GiB (A100 40 GB = 40 GiB).
    for inst in catalog.gpu_instances():
        assert inst.accelerator_memory_gib <= inst.accelerator_memory_gb + 0.5, inst.name


def test_gpu_and_neuron_partitions():
    gpus, neurons = catalog.gpu_instances(), catalog.neuron_instances()
    assert all(i.is_gpu and not i.is_neuron and i.neuron_cores == 0 for i in gpus)
    assert all(i.is_neuron and not i.is_gpu for i in neurons)
    assert all(
        i.neuron_cores == catalog.NEURON_CORES_PER_DEVICE * i.accelerator_count for i in neurons
    )
    assert {i.name for i in gpus} | {i.name for i in neurons} == set(catalog.INSTANCE_TYPES)
    assert {i.family for i in neurons} == {"inf2", "trn1"}


@pytest.mark.parametrize("family", ["g5", "g6", "g6e", "inf2", "trn1", "p5"])
def test_prices_rise_with_size_within_a_family(family):
    members = [i for i in catalog.INSTANCE_TYPES.values() if i.family == family]
    members.sort(key=lambda i: (i.accelerator_count, i.vcpu))
    prices = [i.on_demand_usd_hour for i in members]
    assert prices == sorted(prices) and len(set(prices)) == len(prices)


def test_price_order_across_gpu_generations():
    price = {n: i.on_demand_usd_hour for n, i in catalog.INSTANCE_TYPES.items()}
    assert price["g6.xlarge"] < price["g5.xlarge"] < price["g6e.xlarge"]
    assert price["p4d.24xlarge"] < price["p4de.24xlarge"] < price["p5.48xlarge"]
    assert price["p5.48xlarge"] < price["p5e.48xlarge"]


@pytest.mark.parametrize("spelling", ["g6e.xlarge", "G6E.XLARGE", "  g6e.xlarge "])
def test_instance_lookup_is_case_and_space_insensitive(spelling):
    assert catalog.instance(spelling).name == "g6e.xlarge"


def test_unknown_instance_names_close_matches():
    with pytest.raises(catalog.UnknownInstanceTypeError) as info:
        catalog.instance("g6e.xlarg")
    err = info.value
    assert isinstance(err, KeyError)
    assert "g6e.xlarge" in err.close_matches
    assert str(err).startswith("instance type 'g6e.xlarg' is not in the catalog; did you mean")
    assert not str(err).startswith("'")  # not KeyError's quoted repr


def test_unknown_instance_without_close_match():
    with pytest.raises(catalog.UnknownInstanceTypeError) as info:
        catalog.instance("t3.micro")
    assert info.value.close_matches == ()
    assert str(info.value) == "instance type 't3.micro' is not in the catalog"


def test_describe_mentions_the_numbers():
    assert catalog.instance("g6e.12xlarge").describe() == (
        "g6e.12xlarge (4 x L40S 45.0 GiB each, ~$10.49/h)"
    )
    assert "24 NeuronCores" in catalog.instance("inf2.48xlarge").describe()


# id: (layers, attention heads, kv heads, head dim, max position embeddings) from config.json
PUBLISHED_MODEL_CONFIGS = {
    "llama-3.2-1b": (16, 32, 8, 64, 131072),
    "llama-3.2-3b": (28, 24, 8, 128, 131072),
    "llama-3-8b": (32, 32, 8, 128, 8192),
    "llama-3.1-8b": (32, 32, 8, 128, 131072),
    "llama-3-70b": (80, 64, 8, 128, 8192),
    "llama-3.1-70b": (80, 64, 8, 128, 131072),
    "llama-3.3-70b": (80, 64, 8, 128, 131072),
    "llama-2-7b": (32, 32, 32, 128, 4096),
    "llama-2-13b": (40, 40, 40, 128, 4096),
    "llama-2-70b": (80, 64, 8, 128, 4096),
    "mistral-7b": (32, 32, 8, 128, 32768),
    "mixtral-8x7b": (32, 32, 8, 128, 32768),
    "qwen2.5-7b": (28, 28, 4, 128, 32768),
    "qwen2.5-14b": (48, 40, 8, 128, 32768),
    "qwen2.5-32b": (64, 40, 8, 128, 32768),
    "qwen2.5-72b": (80, 64, 8, 128, 32768),
    "gemma-2-9b": (42, 16, 8, 256, 8192),
    "gemma-2-27b": (46, 32, 16, 128, 8192),
    "phi-3-mini-4k": (32, 32, 32, 96, 4096),
    "phi-3-mini-128k": (32, 32, 32, 96, 131072),
}

# hidden_size from config.json, where hidden = heads x head_dim (no explicit head_dim override)
PUBLISHED_HIDDEN_SIZES = {
    "llama-3.1-8b": 4096,
    "llama-3.1-70b": 8192,
    "llama-2-7b": 4096,
    "llama-2-13b": 5120,
    "qwen2.5-7b": 3584,
    "qwen2.5-72b": 8192,
    "phi-3-mini-4k": 3072,
    "llama-3.2-1b": 2048,
}


def test_catalog_holds_exactly_the_published_models():
    assert set(catalog.MODEL_ARCHITECTURES) == set(PUBLISHED_MODEL_CONFIGS)


@pytest.mark.parametrize("model_id", sorted(PUBLISHED_MODEL_CONFIGS))
def test_architecture_matches_config_json(model_id):
    arch = catalog.architecture(model_id)
    assert (
        arch.layers,
        arch.attention_heads,
        arch.kv_heads,
        arch.head_dim,
        arch.max_position_embeddings,
    ) == PUBLISHED_MODEL_CONFIGS[model_id]
    assert arch.attention_heads % arch.kv_heads == 0
    assert arch.name == model_id


@pytest.mark.parametrize(("model_id", "hidden"), sorted(PUBLISHED_HIDDEN_SIZES.items()))
def test_heads_times_head_dim_is_the_hidden_size(model_id, hidden):
    arch = catalog.architecture(model_id)
    assert arch.attention_heads * arch.head_dim == hidden


@pytest.mark.parametrize(
    ("model_id", "low", "high"),
    [
        ("llama-3.1-8b", 7.5, 8.5),
        ("llama-3.1-70b", 69, 72),
        ("mixtral-8x7b", 46, 47.5),  # all experts resident, not the ~13B active per token
        ("qwen2.5-72b", 72, 73.5),
        ("phi-3-mini-4k", 3.7, 3.9),
    ],
)
def test_parameter_counts(model_id, low, high):
    assert low <= catalog.architecture(model_id).params_billion <= high


def test_architecture_lookup_and_errors():
    assert catalog.architecture("Llama-3.1-8B").name == "llama-3.1-8b"
    with pytest.raises(catalog.UnknownArchitectureError) as info:
        catalog.architecture("llama-3.1-8")
    assert "llama-3.1-8b" in info.value.close_matches
    assert isinstance(info.value, KeyError)


def test_fargate_grid_rows():
    grid = aws_limits.FARGATE_TASK_SIZES
    assert list(grid) == [256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
    assert grid[256] == (512, 1024, 2048)
    assert grid[512] == (1024, 2048, 3072, 4096)
    assert grid[1024] == tuple(range(2048, 8193, 1024))
    assert grid[2048] == tuple(range(4096, 16385, 1024))
    assert grid[4096] == tuple(range(8192, 30721, 1024))
    assert grid[8192] == tuple(range(16384, 61441, 4096))
    assert grid[16384] == tuple(range(32768, 122881, 8192))
    assert grid[32768] == (61440, 122880, 249856)
    assert aws_limits.FARGATE_PLATFORM_1_4_MIN_CPU == 8192


def test_ami_parameters():
    assert catalog.ECS_AMI_SSM_PARAMETERS == {
        "nvidia": "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id",
        "neuron": "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id",
    }
