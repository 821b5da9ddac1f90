"""The re-ranker service over real HTTP: uvicorn on loopback, the tiny cross-encoder it serves.

Reference: sentence-transformers' CrossEncoder on the very same weights and tokenizer. Scores
must agree within float tolerance and rankings must be identical, including for documents
longer than the model's max length (pair truncation) and for a long query.
"""

from __future__ import annotations

import asyncio
import json
import re
import time

import httpx
import numpy as np
import pytest

QUERY = "how do fargate tasks pull container images from a private subnet"
DOCUMENTS = [
    "Fargate tasks in private subnets pull images through ECR interface endpoints or a NAT.",
    "Bananas are rich in potassium.",
    "An S3 gateway endpoint serves the image layers that ECR stores in S3. " * 30,  # truncated
    "SOCI lets Fargate start a container before the whole image has been pulled.",
    "The Eiffel Tower is in Paris.",
    "GPU tasks need the EC2 launch type; Fargate does not expose GPUs.",
    "awsvpc network mode gives each task its own elastic network interface.",
    "x",
    "Image pull dominates Fargate task start time for large images with PyTorch inside.",
    "Ulimits: nofile defaults to 65535 on Fargate and can be raised to 1048576.",
    "A cross-encoder scores a query and a document together in one forward pass.",
    "Cats sleep most of the day.",
]


def _reference_scores(model_dir, bundle, query, documents):
    from sentence_transformers import CrossEncoder

    max_length = json.loads((bundle / "reranker.json").read_text())["max_length"]
    model = CrossEncoder(str(model_dir), max_length=max_length, device="cpu")
    return np.asarray(model.predict([(query, d) for d in documents]), dtype=np.float64)


def _post(server, body, timeout=30.0):
    return httpx.post(server.url + "/v1/rerank", json=body, timeout=timeout)


def test_health_and_metrics(server):
    assert httpx.get(server.url + "/health").json() == {"status": "ok", "model": "tiny-ce"}
    _post(server, {"query": "q", "documents": ["a", "b"]}).raise_for_status()
    text = httpx.get(server.url + "/metrics").text
    assert re.search(r'^reranker_requests_total\{status="200"\} [1-9]', text, re.M)
    assert re.search(r"^reranker_pairs_total [1-9]", text, re.M)
    assert re.search(r"^reranker_ready 1\.0$", text, re.M)
    for name in (
        "reranker_request_seconds_bucket",
        "reranker_batch_pairs_bucket",
        "reranker_queue_pairs",
        "reranker_padded_tokens_total",
    ):
        assert name in text


@pytest.mark.parametrize("long_query", [False, True], ids=["query", "long-query"])
def test_scores_and_ranking_match_sentence_transformers(
    server, tiny_cross_encoder, tiny_bundle, long_query
):
    query = QUERY * (7 if long_query else 1)  # long_first truncation then trims the query too
    body = {"query": query, "documents": DOCUMENTS}
    results = _post(server, body).json()["results"]
    assert len(results) == len(DOCUMENTS)
    got = np.empty(len(DOCUMENTS))
    for r in results:
        got[r["index"]] = r["relevance_score"]
    expected = _reference_scores(tiny_cross_encoder, tiny_bundle, query, DOCUMENTS)
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-5)
    assert [r["index"] for r in results] == np.argsort(-expected, kind="stable").tolist()
    scores = [r["relevance_score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    # Sanity: the reference scores are spread out enough for the ranking check to mean something.
    assert np.min(np.abs(np.diff(np.sort(expected)))) > 1e-4


def test_top_n_return_documents_and_object_documents(server):
    docs = [{"text": d, "id": f"doc-{i}"} for i, d in enumerate(DOCUMENTS[:6])]
    full = _post(server, {"query": QUERY, "documents": docs}).json()
    assert all("document" not in r for r in full["results"])
    top = _post(
        server,
        {
            "query": QUERY,
            "documents": docs,
            "top_n": 3,
            "return_documents": True,
            "model": "tiny-ce",
            "rank_fields": ["text"],
        },
    ).json()
    assert top["model"] == "tiny-ce" and top["id"]
    assert [r["index"] for r in top["results"]] == [r["index"] for r in full["results"][:3]]
    for r in top["results"]:
        assert r["document"] == {"text": DOCUMENTS[r["index"]]}
    many = _post(server, {"query": QUERY, "documents": DOCUMENTS[:2], "top_n": 50}).json()
    assert len(many["results"]) == 2


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"query": "", "documents": ["a"]}, "query must not be empty"),
        ({"query": "   ", "documents": ["a"]}, "query must not be empty"),
        ({"query": "q", "documents": []}, "documents must contain at least one document"),
        ({"query": "q", "documents": ["a"] * 65}, "too many documents: 65; the limit is 64"),
        ({"query": "q", "documents": ["a", "b" * 4001]}, "documents[1] is 4001 characters long"),
        ({"query": "q" * 501, "documents": ["a"]}, "query is 501 characters long"),
        ({"query": "q", "documents": ["a"], "model": "gpt"}, "unknown model 'gpt'"),
        ({"query": "q", "documents": ["a"], "top_n": 0}, "top_n: Input should be greater"),
        ({"documents": ["a"]}, "query: Field required"),
        ({"query": "q", "documents": [{"title": "no text"}]}, "documents.0"),
        ({"query": "q", "documents": "a"}, "documents: Input should be a valid list"),
    ],
)
def test_bad_input_is_422_with_a_clear_message(server, body, message):
    r = _post(server, body)
    assert r.status_code == 422, r.text
    assert message in r.json()["message"]


def test_overload_answers_429_with_retry_after(server_factory, tiny_bundle):
    # A 500 ms collection window keeps the first request's 64 pairs queued while the others
    # arrive; with room for 64 pairs every concurrent request beyond the first must be refused.
    srv = server_factory(
        {
            "MODEL_DIR": str(tiny_bundle),
            "QUEUE_LIMIT": "64",
            "MAX_DOCUMENTS": "64",
            "BATCH_WINDOW_MS": "500",
            "MAX_BATCH": "65536",
        }
    )
    body = {"query": QUERY, "documents": DOCUMENTS * 5 + DOCUMENTS[:4]}  # 64 documents

    async def burst():
        async with httpx.AsyncClient(timeout=30) as client:
            return await asyncio.gather(
                *(client.post(srv.url + "/v1/rerank", json=body) for _ in range(12))
            )

    responses = asyncio.run(burst())
    codes = sorted(r.status_code for r in responses)
    assert set(codes) == {200, 429} and codes.count(200) >= 1, codes
    for r in responses:
        if r.status_code == 429:
            assert int(r.headers["Retry-After"]) >= 1
            assert "server busy" in r.json()["message"]
    # Once the backlog clears the same request is served again.
    assert httpx.post(srv.url + "/v1/rerank", json=body, timeout=30).status_code == 200
    metrics = httpx.get(srv.url + "/metrics").text
    assert re.search(r'^reranker_requests_total\{status="429"\} [1-9]', metrics, re.M)


def test_sigterm_drains_in_flight_requests_and_exits_zero(server_factory, tiny_bundle):
    # A 2.5 s collection window holds every request in flight long enough to deliver SIGTERM
    # while all of them are waiting; each must still get its full answer.
    srv = server_factory(
        {
            "MODEL_DIR": str(tiny_bundle),
            "BATCH_WINDOW_MS": "2500",
            "MAX_BATCH": "65536",
            "DRAIN_TIMEOUT_SECONDS": "20",
        }
    )
    n_requests = 6

    async def scenario():
        async with httpx.AsyncClient(timeout=30) as client:
            tasks = [
                asyncio.create_task(
                    client.post(
                        srv.url + "/v1/rerank",
                        json={"query": f"{QUERY} {i}", "documents": DOCUMENTS},
                    )
                )
                for i in range(n_requests)
            ]
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                m = re.search(
                    r"^reranker_in_flight_requests (\S+)$",
                    (await client.get(srv.url + "/metrics")).text,
                    re.M,
                )
                if m and float(m.group(1)) >= n_requests:
                    break
                await asyncio.sleep(0.02)
            else:
                raise AssertionError("requests never became in flight")
            srv.sigterm()
            await asyncio.sleep(0.3)
            # Stopped accepting: a new connection is refused while the old ones are served.
            with pytest.raises(httpx.TransportError):
                async with httpx.AsyncClient(timeout=2) as fresh:
                    await fresh.get(srv.url + "/health")
            return await asyncio.gather(*tasks)

    responses = asyncio.run(scenario())
    assert [r.status_code for r in responses] == [200] * n_requests
    assert all(len(r.json()["results"]) == len(DOCUMENTS) for r in responses)
    assert srv.proc.wait(30) == 0
    assert "drained, exiting" in srv.output()


def test_health_is_503_when_the_model_cannot_be_loaded(server_factory, tmp_path):
    srv = server_factory({"MODEL_DIR": str(tmp_path / "empty")}, expect_ready=False)
    r = httpx.get(srv.url + "/health")
    assert r.status_code == 503
    assert r.json()["status"] == "failed" and "model.onnx" in r.json()["error"]
    rr = _post(srv, {"query": "q", "documents": ["a"]})
    assert rr.status_code == 503


def test_int8_variant_serves_close_scores(server_factory, tiny_bundle, tiny_cross_encoder):
    srv = server_factory({"MODEL_DIR": str(tiny_bundle), "MODEL_VARIANT": "int8"})
    results = _post(srv, {"query": QUERY, "documents": DOCUMENTS}).json()["results"]
    got = np.empty(len(DOCUMENTS))
    for r in results:
        got[r["index"]] = r["relevance_score"]
    expected = _reference_scores(tiny_cross_encoder, tiny_bundle, QUERY, DOCUMENTS)
    # int8 is approximate by design: close, not equal (the benchmark reports rank agreement).
    assert np.max(np.abs(got - expected)) < 0.05
