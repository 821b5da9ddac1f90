"""A peer re-ranker behind the same HTTP shape as the service, for bench/reranker_bench.py.

Runs inside a peer's own virtualenv (created by the benchmark under .cache/reranker-peers/), so
it imports nothing from this repository. Each peer is served the way its documentation shows,
with one model call at a time (a lock): on 2 vCPUs, concurrent calls without cross-request
batching only oversubscribe the cores, so serialising is the peer's best case, not its worst.

    PEER=fastembed | st-onnx   MODEL_DIR=<dir>   MAX_LENGTH=512   PORT=<port>
"""

import os
import threading
from collections.abc import Callable, Sequence


def fastembed_scorer(model_dir: str, max_length: int) -> Callable[[str, Sequence[str]], list]:
    """fastembed's TextCrossEncoder on the local ONNX export (no model hub)."""
    from fastembed.common.model_description import ModelSource
    from fastembed.rerank.cross_encoder import TextCrossEncoder

    name = "local/minilm-l6-cross-encoder"
    TextCrossEncoder.add_custom_model(
        model=name,
        sources=ModelSource(hf=name),
        model_file="model.onnx",
        description="all-MiniLM-L6-v2 with a seeded 1-label head (benchmark)",
        size_in_gb=0.09,
    )
    # fastembed truncates to the tokenizer's model_max_length; the bench writes max_length there.
    del max_length
    model = TextCrossEncoder(name, specific_model_path=model_dir)
    return lambda query, docs: list(model.rerank(query, docs, batch_size=64))


def st_onnx_scorer(model_dir: str, max_length: int) -> Callable[[str, Sequence[str]], list]:
    """sentence-transformers' CrossEncoder with its ONNX Runtime backend (optimum)."""
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(
        model_dir,
        max_length=max_length,
        device="cpu",
        backend="onnx",
        model_kwargs={"file_name": "onnx/model.onnx", "provider": "CPUExecutionProvider"},
    )
    return lambda query, docs: model.predict(
        [(query, d) for d in docs], show_progress_bar=False
    ).tolist()


SCORERS = {"fastembed": fastembed_scorer, "st-onnx": st_onnx_scorer}


def create_app(peer: str, model_dir: str, max_length: int):
    """FastAPI app: GET /health, POST /v1/rerank {query, documents} -> ranked results."""
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

    score = SCORERS[peer](model_dir, max_length)
    lock = threading.Lock()
    app = FastAPI()

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok"}

    @app.post("/v1/rerank")
    async def rerank(request: Request) -> JSONResponse:
        import anyio.to_thread

        body = await request.json()
        docs = [d if isinstance(d, str) else d["text"] for d in body["documents"]]

        def run() -> list:
            with lock:
                return [float(s) for s in score(body["query"], docs)]

        scores = await anyio.to_thread.run_sync(run)
        order = sorted(range(len(scores)), key=lambda i: -scores[i])
        results = [{"index": i, "relevance_score": scores[i]} for i in order]
        return JSONResponse({"model": peer, "results": results})

    return app


def main() -> None:
    """Serve on 127.0.0.1:$PORT."""
    import uvicorn

    app = create_app(
        os.environ["PEER"], os.environ["MODEL_DIR"], int(os.environ.get("MAX_LENGTH", "512"))
    )
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")


if __name__ == "__main__":
    main()
