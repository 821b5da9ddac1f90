"""Container entrypoint: `python -m app` starts uvicorn with the contract's settings.

uvicorn itself handles SIGTERM the way ECS needs: it closes the listening socket at once (the
ALB's next health check fails and it deregisters the target), lets in-flight requests finish for
up to DRAIN_TIMEOUT_SECONDS, runs the lifespan shutdown (which stops the batch worker) and exits
0, all inside the container's stopTimeout (contract.STOP_TIMEOUT_SECONDS).
"""

from __future__ import annotations

import logging
import signal
import sys

import uvicorn

from app.server import create_app
from app.settings import Settings

LOG = logging.getLogger("reranker")


class DrainingServer(uvicorn.Server):
    """uvicorn.Server that flips /health to 503 on a stop signal and exits 0 after draining.

    uvicorn re-raises a captured signal once it has shut down, so the process would die "by
    SIGTERM" (exit 143 in ECS) even after a clean drain. A SIGTERM that we drained for is a normal
    stop, so it is not re-raised; SIGINT keeps uvicorn's behaviour.
    """

    def handle_exit(self, sig: int, frame: object) -> None:
        state = getattr(self.config.app, "state", None)
        if state is not None and hasattr(state, "reranker"):
            state.reranker.draining = True
        LOG.info("signal %s: draining in-flight requests", sig)
        super().handle_exit(sig, frame)  # pyright: ignore[reportArgumentType] (a FrameType)
        captured = getattr(self, "_captured_signals", None)
        if sig == signal.SIGTERM and captured and captured[-1] == sig:
            captured.pop()


def main() -> int:
    """Parse settings, build the app and serve until stopped; returns the exit code."""
    settings = Settings.from_env()
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stdout,
    )
    app = create_app(settings)
    config = uvicorn.Config(
        app,
        host="0.0.0.0",  # awsvpc: the task's own ENI, reached only via the ALB
        port=settings.port,
        loop="auto",
        http="auto",
        lifespan="on",
        access_log=False,
        log_level=settings.log_level,
        timeout_keep_alive=settings.keep_alive_s,
        # uvicorn hands it to asyncio.wait_for, which takes float seconds; its hint says int.
        timeout_graceful_shutdown=settings.drain_timeout_s,  # pyright: ignore[reportArgumentType]
    )
    server = DrainingServer(config)
    server.run()
    return 0 if server.started else 1


if __name__ == "__main__":
    raise SystemExit(main())
