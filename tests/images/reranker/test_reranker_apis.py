"""The rerank APIs clients already speak: the official `cohere` SDK's v1 client (`cohere.Client`
in the pinned release: `/v1/rerank`, also Jina's shape) and its ClientV2 (`/v2/rerank`) against
the service on loopback."""

from __future__ import annotations

import cohere
import httpx
import pytest

from contracts import reranker as c

QUERY = "how do fargate tasks pull images?"
DOCS = [
    "Private subnets need ECR interface endpoints or a NAT gateway to pull images.",
    "Paris is the capital and largest city of France.",
    "Fargate tasks pull container images from ECR over the task's network interface.",
    "The Eiffel Tower was completed in 1889.",
]


def _direct(server, path: str, body: dict) -> httpx.Response:
    return httpx.post(server.url + path, json=body, timeout=30)


def test_cohere_v1_client_reranks_against_the_service(server):
    client = cohere.Client(api_key="unused", base_url=server.url)
    got = client.rerank(
        model="tiny-ce", query=QUERY, documents=DOCS, top_n=3, return_documents=True
    )
    want = _direct(server, c.RERANK_PATH, {"query": QUERY, "documents": DOCS}).json()
    assert [r.index for r in got.results] == [r["index"] for r in want["results"]][:3]
    for result, expected in zip(got.results, want["results"], strict=False):
        assert result.relevance_score == pytest.approx(expected["relevance_score"], abs=1e-6)
        assert result.document is not None and result.document.text == DOCS[result.index]


def test_cohere_client_v2_reranks_against_the_service(server):
    client = cohere.ClientV2(api_key="unused", base_url=server.url)
    got = client.rerank(model="tiny-ce", query=QUERY, documents=DOCS, top_n=2)
    want = _direct(server, c.RERANK_PATH, {"query": QUERY, "documents": DOCS}).json()
    assert [r.index for r in got.results] == [r["index"] for r in want["results"]][:2]
    for result, expected in zip(got.results, want["results"], strict=False):
        assert result.relevance_score == pytest.approx(expected["relevance_score"], abs=1e-6)


def test_v2_max_tokens_per_doc_scores_each_document_cut_to_that_many_tokens(server):
    # Every word is one token of the WordPiece vocabulary, so the first k tokens are k words.
    words = ["the", "cat", "sat", "on", "the", "mat", "while", "fargate", "pulled", "the", "image"]
    docs = [" ".join(words), " ".join(reversed(words))]
    body = {"model": "tiny-ce", "query": QUERY, "documents": docs, "max_tokens_per_doc": 3}
    cut = _direct(server, c.RERANK_V2_PATH, body).json()["results"]
    short = [" ".join(words[:3]), " ".join(list(reversed(words))[:3])]
    want = _direct(server, c.RERANK_PATH, {"query": QUERY, "documents": short}).json()["results"]
    assert [(r["index"], round(r["relevance_score"], 6)) for r in cut] == [
        (r["index"], round(r["relevance_score"], 6)) for r in want
    ]
    whole = _direct(server, c.RERANK_PATH, {"query": QUERY, "documents": docs}).json()["results"]
    assert {r["index"]: r["relevance_score"] for r in whole} != {
        r["index"]: r["relevance_score"] for r in cut
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"query": QUERY, "documents": DOCS}, "model: Field required"),
        ({"model": "other", "query": QUERY, "documents": DOCS}, "unknown model 'other'"),
        ({"model": "tiny-ce", "query": QUERY, "documents": []}, "at least one document"),
        ({"model": "tiny-ce", "query": QUERY, "documents": [{"text": "x"}]}, "documents.0"),
    ],
)
def test_v2_refuses_what_cohere_v2_refuses_in_the_one_error_shape(server, body, message):
    response = _direct(server, c.RERANK_V2_PATH, body)
    assert response.status_code == 422
    assert message in response.json()["message"]
