"""Pure helpers of the seed rules (``guardrails/containers.py``, ``deployment.py``): what counts
as a hub model id, which commands and environments fetch weights from the hub, which policy
documents make a queue consumer."""

from __future__ import annotations

from guardrails.containers import LOCAL_ROOTS, hub_downloads, hub_model_id
from guardrails.deployment import allows_receive
from hypothesis import given
from hypothesis import strategies as st

_WORD = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,20}", fullmatch=True)
_ORG = _WORD.filter(lambda w: w.lower() not in LOCAL_ROOTS)


@given(_ORG, _WORD)
def test_org_slash_name_is_a_hub_id(org, name):
    assert hub_model_id(f"{org}/{name}") == f"{org}/{name}"


@given(_WORD, _WORD, _WORD)
def test_image_references_and_paths_are_never_hub_ids(org, name, tag):
    assert hub_model_id(f"{org}/{name}:{tag}") is None  # an image reference with a tag
    assert hub_model_id(f"{org}/{name}@sha256:{tag}") is None
    assert hub_model_id(f"/{org}/{name}") is None
    assert hub_model_id(f"s3://{org}/{name}") is None
    assert hub_model_id(f"/mnt/{org}/{name}") is None
    assert hub_model_id(f"{org}/{name}/{tag}") is None  # a nested relative path
    assert hub_model_id(f"mnt/{name}") is None


@given(_ORG, _WORD, st.sampled_from(["--model", "--model-id", "--model-path", "--tokenizer"]))
def test_a_model_flag_with_a_hub_id_downloads_unless_offline(org, name, flag):
    repo = f"{org}/{name}"
    for command in ([flag, repo], [f"{flag}={repo}"], ["--port", "8000", flag, repo]):
        assert hub_downloads({"command": command}) == [f"{flag} {repo}"]
        offline = [{"name": "HF_HUB_OFFLINE", "value": "1"}]
        assert hub_downloads({"command": command, "environment": offline}) == []


@given(_ORG, _WORD)
def test_other_flags_and_variables_do_not_count(org, name):
    repo = f"{org}/{name}"
    assert hub_downloads({"command": ["--served-model-name", repo]}) == []
    assert hub_downloads({"environment": [{"name": "UPSTREAM", "value": repo}]}) == []
    assert hub_downloads({"environment": [{"name": "MODEL_ID", "value": repo}]}) == [
        f"MODEL_ID={repo}"
    ]


def test_queue_consumer_documents():
    def doc(effect: str, *actions: str) -> dict:
        return {"Statement": [{"Effect": effect, "Action": list(actions)}]}

    assert allows_receive(doc("Allow", "sqs:ReceiveMessage"))
    assert allows_receive(doc("Allow", "SQS:*"))
    assert allows_receive(doc("Allow", "sqs:Receive*"))
    assert not allows_receive(doc("Deny", "sqs:ReceiveMessage"))
    assert not allows_receive(doc("Allow", "sqs:SendMessage"))
    assert not allows_receive(doc("Allow", "*"))  # an admin role, not a consumer signal
    assert allows_receive({"Statement": {"Effect": "Allow", "Action": "sqs:ReceiveMessage"}})
