"""Baseline for bench/reranker_bench.py: sentence-transformers' CrossEncoder served the obvious way.

A FastAPI app with the same `/v1/rerank` request schema and validation as the real service, whose
synchronous handler (run on Starlette's thread pool, as FastAPI does for `def` endpoints) calls
`CrossEncoder.predict` on the request's pairs with its defaults (batch_size=32, torch picks its
own thread count). This is what a team would write first, and what the ONNX service must beat.

Run (the benchmark does this itself):
    MODEL_DIR=<hf cross-encoder dir> MAX_LENGTH=512 PORT=8081 \
        python bench/reranker_baseline_server.py
"""

import os
import sys
from pathlib import Path

IMAGE_DIR = Path(__file__).resolve().parents[1] / "images" / "reranker"
sys.path.insert(0, str(IMAGE_DIR))


def create_app(model_dir: str, max_length: int):
    """FastAPI app scoring with CrossEncoder.predict per request."""
    import numpy as np
    from app.server import RerankRequest, rank
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(model_dir, max_length=max_length, device="cpu")
    app = FastAPI()

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok"}

    @app.post("/v1/rerank")
    def rerank(req: RerankRequest) -> JSONResponse:
        texts = [d if isinstance(d, str) else d.text for d in req.documents]
        scores = np.asarray(
            model.predict([(req.query, t) for t in texts], show_progress_bar=False),
            dtype=np.float64,
        )
        results = [
            {"index": i, "relevance_score": float(scores[i])} for i in rank(scores, req.top_n)
        ]
        return JSONResponse({"model": "cross-encoder-torch", "results": results})

    return app


def main() -> None:
    """Serve on 127.0.0.1:$PORT (benchmark use only)."""
    import uvicorn

    app = create_app(os.environ["MODEL_DIR"], int(os.environ.get("MAX_LENGTH", "512")))
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")


if __name__ == "__main__":
    main()
