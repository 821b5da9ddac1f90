"""Every layer's problems in one run: what the schema refuses is set aside so that the plan
still checks the rest, without reporting what a set-aside part would cause; values set with
`--secret` where no secret belongs, and credentials in plain text, are refused by path."""

from __future__ import annotations

import pytest

from ecs_inference.config.issues import ConfigError, ConfigIssue
from ecs_inference.config.load import check_stack_config, near_miss, plan_stack
from ecs_inference.config.stack_file import parse_stack_file
from ecs_inference.plan import build_plan
from tests.stack_config import mutate, reference


def _all_issues(raw: dict, **kwargs) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        plan_stack(raw, "dev", lambda cfg: build_plan(cfg, "dev", region="us-east-1"), **kwargs)
    return info.value


def _paths(error: ConfigError) -> list[str]:
    return [i.path for i in error.issues]


def test_a_near_miss_key_is_read_as_the_key_it_means_so_its_value_is_checked() -> None:
    raw = mutate(reference("dev"), "models.llama.maxModelLenght", 0)
    del raw["models"]["llama"]["maxModelLen"]
    error = _all_issues(raw)
    assert _paths(error) == [
        "platform.models.llama.maxModelLenght",
        "platform.models.llama.maxModelLen",
    ]
    assert "did you mean `maxModelLen`?" in error.issues[0].message
    assert "must be > 0" in error.issues[1].message


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("max_model_len", "maxModelLen"),
        ("maxmodellen", "maxModelLen"),
        ("weightUri", "weightsUri"),
        ("zzz", None),
    ],
)
def test_near_misses(typo: str, meant: str | None) -> None:
    keys = ["maxModelLen", "weightsUri", "engine", "pool", "maxConcurrentSequences"]
    assert near_miss(typo, keys) == meant


def test_schema_and_plan_problems_of_different_entries_come_together() -> None:
    """A credential in one model's environment and another model too big for its pool: the
    schema's problem and the plan's in one run."""
    raw = reference("dev")
    raw = mutate(raw, "models.llama.environment", {"DB_PASSWORD": "hunter2"})
    raw = mutate(raw, "models.big", {**raw["models"]["llama"], "architecture": "llama-3.1-70b"})
    error = _all_issues(raw)
    assert "platform.models.llama.environment" in _paths(error)
    assert any(i.path.startswith("platform.models.big") for i in error.issues), error
    assert not error.not_checked


def test_a_problem_caused_by_a_set_aside_value_is_not_reported() -> None:
    """An unpinned `images.vllm` is set aside; the 'no image' the model would then have is not
    the user's problem, and the entry is named as not checked further."""
    error = _all_issues(mutate(reference("dev"), "images.vllm", "vllm/vllm-openai:latest"))
    assert _paths(error) == ["platform.images.vllm"]
    assert error.not_checked == ["platform.models.llama"]
    assert "Not checked further until the problems above are fixed" in str(error)


def test_an_entry_with_an_invalid_value_is_planned_only_once_it_validates() -> None:
    """A pool whose instance type is invalid gets no 'nothing to take its types from'."""
    raw = mutate(reference("dev"), "gpuPools.l40s.instanceType", 7)
    error = _all_issues(raw)
    assert _paths(error) == ["platform.gpuPools.l40s.instanceType"]


def test_an_inert_key_set_aside_leaves_the_rest_of_its_entry_checked() -> None:
    raw = mutate(reference("dev"), "models.llama.environment", {"API_TOKEN": "x"})
    raw = mutate(raw, "models.llama.maxConcurrentSequences", 4096)
    error = _all_issues(raw)
    assert _paths(error)[0] == "platform.models.llama.environment"
    assert len(error.issues) == 2, error


SECURE_FILE = """\
config:
  ecs-inference:platform:
    gpuPools:
      l40s:
        instanceType:
          secure: v1:AAAA:ZzZlLnhsYXJnZQ==
    models:
      llama:
        environment:
          LOG_LEVEL:
            secure: v1:BBBB:aW5mbw==
        secrets:
          API_TOKEN:
            secure: v1:CCCC:dG9rZW4=
"""


def test_a_secret_where_none_belongs_is_refused_naming_path_line_and_why() -> None:
    source = parse_stack_file(SECURE_FILE, "Pulumi.dev.yaml")
    raw = reference("dev")
    raw["models"]["llama"]["environment"] = {"LOG_LEVEL": "info"}
    raw["models"]["llama"]["secrets"] = {"API_TOKEN": "token"}
    checked = check_stack_config(raw, "dev", source=source, key_secret=True)
    by_path = {i.path: i for i in checked.issues}
    assert set(by_path) == {
        "platform.gpuPools.l40s.instanceType",
        "platform.models.llama.environment.LOG_LEVEL",
    }
    pool = by_path["platform.gpuPools.l40s.instanceType"]
    assert pool.where == "Pulumi.dev.yaml:5"
    assert "cannot stay secret" in pool.message
    env = by_path["platform.models.llama.environment.LOG_LEVEL"]
    assert env.where == "Pulumi.dev.yaml:10"
    # The advice, followed literally, moves it where a secret belongs.
    assert (
        "pulumi config set --secret --path "
        "'ecs-inference:platform.models.llama.secrets.LOG_LEVEL'" in env.message
    )


def test_a_credential_in_plain_text_is_refused_and_one_set_with_secret_accepted() -> None:
    raw = mutate(reference("dev"), "models.llama.secrets", {"API_TOKEN": "token"})
    plain = "config:\n  ecs-inference:platform:\n    models:\n      llama:\n        secrets:\n"
    plain += "          API_TOKEN: token\n"
    for source, key_secret in ((None, False), (parse_stack_file(plain, "Pulumi.dev.yaml"), True)):
        checked = check_stack_config(raw, "dev", source=source, key_secret=key_secret)
        [issue] = checked.issues
        assert issue.path == "platform.models.llama.secrets.API_TOKEN"
        assert "in plain text" in issue.message
        assert (
            "pulumi config set --secret --path "
            "'ecs-inference:platform.models.llama.secrets.API_TOKEN'" in issue.message
        )
    encrypted = plain.replace(
        "API_TOKEN: token", "API_TOKEN:\n            secure: v1:CCCC:dG9rZW4="
    )
    secure = parse_stack_file(encrypted, "Pulumi.dev.yaml")
    assert secure.secure == {"platform.models.llama.secrets.API_TOKEN"}
    checked = check_stack_config(raw, "dev", source=secure, key_secret=True)
    assert not [i for i in checked.issues if "plain text" in i.message]


def test_a_whole_encrypted_setting_is_one_clear_issue() -> None:
    source = parse_stack_file(
        "config:\n  ecs-inference:platform:\n    secure: v1:AAAA:e30=\n", "Pulumi.dev.yaml"
    )
    checked = check_stack_config({"secure": "v1:AAAA:e30="}, "dev", source=source)
    assert checked.config is None
    [issue] = checked.issues
    assert issue == ConfigIssue(issue.path, issue.message, "Pulumi.dev.yaml:2")
    assert "encrypt only the secret values" in issue.message


def test_six_independent_mistakes_come_out_in_one_run_each_at_its_leaf() -> None:
    """A typo'd key of one model, a bad CIDR entry, an image that is no reference, an instance
    type not in the catalog, a Fargate cpu off the grid and a model too big for its GPU: six
    problems, one run, each at the deepest path holding the value (the fit is a combination of
    the model's keys, so it is the model's), and each message about the value given."""
    raw = reference("dev")
    raw = mutate(raw, "endpoint.allowedCidrs", ["10.0.0.0/8", "10.0.0.300/33"])
    raw = mutate(raw, "images.sglang", "not an image ref")
    raw = mutate(raw, "neuronPools.inf2.instanceType", "inf2.8xlargee")
    raw = mutate(raw, "models.llama.maxConcurrentSequences", 4096)
    raw = mutate(raw, "rerankers.rerank.cpu", 3000)
    raw = mutate(raw, "models.llama.maxGenerationSecond", 300)  # beside the key it means
    error = _all_issues(raw)
    by_path = {i.path: i.message for i in error.issues}
    assert sorted(by_path) == [
        "platform.endpoint.allowedCidrs[1]",
        "platform.images.sglang",
        "platform.models.llama",
        "platform.models.llama.maxGenerationSecond",
        "platform.neuronPools.inf2.instanceType",
        "platform.rerankers.rerank.cpu",
    ], error
    assert not error.not_checked
    assert by_path["platform.endpoint.allowedCidrs[1]"].startswith("'10.0.0.300/33' is not a CIDR")
    assert by_path["platform.images.sglang"].startswith("'not an image ref' is not an image ref")
    assert "latest" not in by_path["platform.images.sglang"]
    assert "needs 4727.6 GiB" in by_path["platform.models.llama"]


@pytest.mark.parametrize(
    ("image", "told"),
    [
        ("ghcr.io/berriai/litellm:latest", "is tagged 'latest'"),
        ("ghcr.io/berriai/litellm", "has no tag or digest"),
        ("localhost:5000/litellm", "has no tag or digest"),
        ("Not An Image", "is not an image reference"),
    ],
)
def test_an_image_refusal_describes_the_value_given(image: str, told: str) -> None:
    error = _all_issues(mutate(reference("dev"), "images.sglang", image))
    (issue,) = error.issues
    assert issue.path == "platform.images.sglang"
    assert issue.message.startswith(f"{image!r} {told}")


def test_every_bad_entry_of_a_list_checked_by_its_section_is_reported_at_its_index() -> None:
    raw = mutate(reference("dev"), "endpoint.allowedCidrs", ["10.0.0/8", "10.0.0.0/8", "0.0.0.0/0"])
    error = _all_issues(raw)
    assert _paths(error) == [
        "platform.endpoint.allowedCidrs[0]",
        "platform.endpoint.allowedCidrs[2]",
    ]
    assert "admits the whole internet" in error.issues[1].message
