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


def _work_tokens(bundle, body):
    """What the service charges for `body` (its own engine and the contract's cost model)."""
    from app.engine import Engine

    engine = Engine(bundle)
    encodings = engine.tokenize([(body["query"], d) for d in body["documents"]])
    return sum(engine.info.shape.work_tokens(len(e.ids)) for e in encodings)


def _post(server, body, timeout=30.0):
    return httpx.post(server.url + "/v1/rerank", json=body, timeout=timeout)


def test_health_and_metrics(server):
    health = httpx.get(server.url + "/health").json()
    assert {k: health[k] for k in ("status", "model")} == {"status": "ok", "model": "tiny-ce"}
    # The fixture's bundle was not judged, so "auto" serves fp32: a float graph, no int8 kernel.
    kernels = health["kernels"]
    assert kernels["variant"] == "fp32" and kernels["providers"] == ["CPUExecutionProvider"]
    assert kernels["quantised_ops"] == {} and kernels["int8_kernel"] is None
    assert "kernels: " in server.output()
    _post(server, {"query": "q", "documents": ["a", "b"]}).raise_for_status()
    text = httpx.get(server.url + "/metrics").text
    assert re.search(r'^reranker_requests_total\{status="200"\} [1-9]', text, re.M)
    assert re.search(r"^reranker_pairs_total [1-9]", text, re.M)
    assert re.search(r"^reranker_ready 1\.0$", text, re.M)
    for name in (
        "reranker_request_seconds_bucket",
        "reranker_batch_pairs_bucket",
        "reranker_queue_work_tokens",
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
    # A 500 ms collection window keeps the first request's pairs queued while the others
    # arrive; with room for about one request's work tokens, the rest must be refused.
    body = {"query": QUERY, "documents": DOCUMENTS * 5 + DOCUMENTS[:4]}  # 64 documents
    srv = server_factory(
        {
            "MODEL_DIR": str(tiny_bundle),
            "QUEUE_TOKENS": str(int(1.5 * _work_tokens(tiny_bundle, body))),
            "MAX_DOCUMENTS": "64",
            "BATCH_WINDOW_MS": "500",
            "MAX_BATCH": "65536",
        }
    )

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
            assert "server busy" in r.json()["message"] and "work tokens" in r.json()["message"]
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
    # MODEL_VARIANT=auto reads reranker.json first to know which model file it needs.
    assert r.json()["status"] == "failed" and "reranker.json" in r.json()["error"]
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
    kernels = httpx.get(srv.url + "/health").json()["kernels"]
    assert kernels["variant"] == "int8"
    # Dynamic quantisation as ORT runs it: activations quantised per run, integer GEMMs.
    assert {"DynamicQuantizeMatMul", "QAttention"} <= set(kernels["quantised_ops"])
    assert kernels["int8_kernel"]


def test_a_poisoned_request_fails_alone_and_every_valid_one_is_served(server_factory, tiny_bundle):
    # A long collection window merges all of them into one batch unless the poison is caught.
    srv = server_factory(
        {"MODEL_DIR": str(tiny_bundle), "BATCH_WINDOW_MS": "300", "MAX_BATCH": "65536"}
    )
    poisoned = [*DOCUMENTS[:3], "tail \ud800 of a split emoji", *DOCUMENTS[3:6]]
    raw = json.dumps({"query": QUERY, "documents": poisoned})  # "\ud800" stays a JSON escape
    assert "\\ud800" in raw

    async def burst():
        async with httpx.AsyncClient(timeout=30) as client:
            valid = [
                client.post(
                    srv.url + "/v1/rerank", json={"query": f"{QUERY} {i}", "documents": DOCUMENTS}
                )
                for i in range(8)
            ]
            bad = client.post(
                srv.url + "/v1/rerank",
                content=raw.encode(),
                headers={"content-type": "application/json"},
            )
            return await asyncio.gather(bad, *valid)

    bad, *valid = asyncio.run(burst())
    assert [r.status_code for r in valid] == [200] * 8
    assert all(len(r.json()["results"]) == len(DOCUMENTS) for r in valid)
    assert bad.status_code == 422, bad.text
    assert "documents[3]" in bad.json()["message"] and "U+D800" in bad.json()["message"]


def test_an_oversized_request_gets_413_saying_how_to_split_it(server_factory, tiny_bundle):
    srv = server_factory(
        {"MODEL_DIR": str(tiny_bundle), "QUEUE_TOKENS": "4000", "MAX_REQUEST_TOKENS": "1000"}
    )
    r = _post(srv, {"query": QUERY, "documents": DOCUMENTS * 4})
    assert r.status_code == 413, r.text
    message = r.json()["message"]
    m = re.search(r"at least (\d+) requests of at most (\d+) documents", message)
    assert m, message
    # Following the advice works.
    per_request = int(m.group(2))
    docs = DOCUMENTS * 4
    for start in range(0, len(docs), per_request):
        part = _post(srv, {"query": QUERY, "documents": docs[start : start + per_request]})
        assert part.status_code == 200, part.text


@pytest.mark.parametrize(
    ("method", "path", "content", "status", "message"),
    [
        ("GET", "/v1/rerank", None, 405, "Method Not Allowed"),
        ("POST", "/v2/nothing", b"{}", 404, "Not Found"),
        ("POST", "/v1/rerank", b"query=q&documents=a", 400, "not valid JSON"),
        ("POST", "/v1/rerank", b'{"query": "q", "documents": ["a",', 400, "not valid JSON"),
        ("POST", "/v1/rerank", b"[" * 100_000 + b"]" * 100_000, 400, "JSON"),
        ("POST", "/v1/rerank", b'{"query": "q"}', 422, "documents: Field required"),
    ],
)
def test_every_error_has_one_json_shape_with_a_message(
    server, method, path, content, status, message
):
    r = httpx.request(
        method,
        server.url + path,
        content=content,
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert r.status_code == status, r.text
    body = r.json()
    assert isinstance(body.get("message"), str) and message in body["message"], body
