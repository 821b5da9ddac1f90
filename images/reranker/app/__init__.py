"""Fast CPU cross-encoder re-ranking service (ONNX Runtime + Rust tokenizers + FastAPI)."""
