"""Minimal HTTP/1.1 reverse proxy that keeps idle Server-Sent-Event streams alive.

Why: the ALB closes a connection on which no byte moved for its idle timeout. Some engines —
vLLM 0.11.0, the server optimum-neuron 0.4.5 runs, among them — write nothing while a request
waits in the queue or during a long prefill, and have no keep-alive option (vLLM 0.33.0 added
`--sse-keep-alive-interval`); each engine's module (`components/engines/`) says whether its image
needs this proxy. Their entrypoints run the engine on loopback and this proxy on the service
port (`serve_behind_proxy`). The images copy this one file from the `contracts` named build
context, like the contracts their entrypoints read.

What it does: forwards each request to the upstream on a fresh loopback connection; relays
the response; when the response is `text/event-stream` and nothing arrived from upstream for
`interval` seconds at an event boundary, it sends the SSE comment `: keep-alive` (ignored by
SSE clients, OpenAI SDKs included, but it resets the ALB idle timer). Everything else —
status, headers, `/health`, JSON bodies — passes through unchanged apart from hop-by-hop
headers and framing. Client connections are kept alive between requests as the ALB expects.

Standard library only and Python 3.10-compatible (the Neuron DLC's interpreter).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import subprocess
from collections.abc import AsyncIterator, Sequence

LOOPBACK = "127.0.0.1"
"""Where the engine listens: only the proxy may reach it."""
KEEPALIVE_COMMENT = b": keep-alive\n\n"
MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024
"""Request bodies are buffered (prompts are JSON); larger ones get 413."""

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "expect",
    }
)

log = logging.getLogger("sse_proxy")


class ProtocolError(Exception):
    """The peer sent something that is not HTTP/1.x we can relay."""


async def _read_head(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None  # clean close between requests
        raise ProtocolError("connection closed inside the header block") from None
    except asyncio.LimitOverrunError:
        raise ProtocolError("header block too large") from None
    return head


def _parse_head(head: bytes) -> tuple[str, list[tuple[str, str]]]:
    lines = head.decode("latin-1").split("\r\n")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise ProtocolError(f"malformed header line {line[:80]!r}")
        headers.append((name, value.strip()))
    return lines[0], headers


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def _tokens(headers: list[tuple[str, str]], name: str) -> set[str]:
    return {
        token.strip().lower()
        for key, value in headers
        if key.lower() == name
        for token in value.split(",")
    }


async def _iter_body(
    reader: asyncio.StreamReader, headers: list[tuple[str, str]], until_close: bool
) -> AsyncIterator[bytes]:
    """Yield the decoded body pieces (chunked, Content-Length, or until the peer closes)."""
    if "chunked" in _tokens(headers, "transfer-encoding"):
        while True:
            size_line = await reader.readuntil(b"\r\n")
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise ProtocolError("bad chunk size") from None
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass  # trailers are dropped
                return
            data = await reader.readexactly(size)
            await reader.readexactly(2)
            yield data
    length = _header(headers, "content-length")
    if length is not None:
        if not length.isdigit():
            raise ProtocolError("bad Content-Length")
        remaining = int(length)
        while remaining:
            data = await reader.read(min(remaining, 65536))
            if not data:
                raise ProtocolError("body shorter than Content-Length")
            remaining -= len(data)
            yield data
        return
    if until_close:
        while data := await reader.read(65536):
            yield data


async def _read_request_body(reader: asyncio.StreamReader, headers: list[tuple[str, str]]) -> bytes:
    body = bytearray()
    async for piece in _iter_body(reader, headers, until_close=False):
        body += piece
        if len(body) > MAX_BODY_BYTES:
            raise ProtocolError("request body too large")
    return bytes(body)


def _simple_response(status: str, message: str, close: bool) -> bytes:
    body = message.encode() + b"\n"
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
        f"Connection: {'close' if close else 'keep-alive'}\r\n\r\n"
    ).encode() + body


class KeepAliveProxy:
    """Proxy from a listening socket to `upstream_host:upstream_port`."""

    def __init__(self, upstream_host: str, upstream_port: int, interval: float) -> None:
        if interval <= 0:
            raise ValueError("keep-alive interval must be positive")
        self.upstream_host = upstream_host
        self.upstream_port = upstream_port
        self.interval = interval

    async def serve(self, host: str, port: int) -> asyncio.AbstractServer:
        """Start listening; the caller owns the returned server."""
        return await asyncio.start_server(self._client, host, port, limit=MAX_HEAD_BYTES)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._one_exchange(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except ProtocolError as exc:
            log.warning("closing client connection: %s", exc)
            with contextlib.suppress(ConnectionError):
                writer.write(_simple_response("400 Bad Request", str(exc), close=True))
                await writer.drain()
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _one_exchange(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Relay one request/response; return whether the client connection stays open."""
        head = await _read_head(reader)
        if head is None:
            return False
        request_line, headers = _parse_head(head)
        parts = request_line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise ProtocolError(f"unsupported request line {request_line[:80]!r}")
        method, version = parts[0], parts[2]
        client_close = "close" in _tokens(headers, "connection") or (
            version == "HTTP/1.0" and "keep-alive" not in _tokens(headers, "connection")
        )
        if "100-continue" in _tokens(headers, "expect"):
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = await _read_request_body(reader, headers)

        try:
            up_reader, up_writer = await asyncio.open_connection(
                self.upstream_host, self.upstream_port, limit=MAX_HEAD_BYTES
            )
        except OSError:
            # Engine still loading (or gone): the ALB health check sees 502 until it listens.
            writer.write(_simple_response("502 Bad Gateway", "engine not reachable", client_close))
            await writer.drain()
            return not client_close
        try:
            forwarded = [(k, v) for k, v in headers if k.lower() not in _HOP_BY_HOP]
            out = [f"{method} {parts[1]} HTTP/1.1"]
            out += [f"{k}: {v}" for k, v in forwarded]
            out += [f"Content-Length: {len(body)}"] if body or method in ("POST", "PUT") else []
            out += ["Connection: close", "", ""]
            up_writer.write("\r\n".join(out).encode("latin-1") + body)
            await up_writer.drain()
            return await self._relay_response(method, up_reader, writer, client_close)
        finally:
            up_writer.close()
            with contextlib.suppress(ConnectionError):
                await up_writer.wait_closed()

    async def _relay_response(
        self,
        method: str,
        up_reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        client_close: bool,
    ) -> bool:
        while True:
            head = await _read_head(up_reader)
            if head is None:
                raise ConnectionError("upstream closed without a response")
            status_line, headers = _parse_head(head)
            status_parts = status_line.split(" ", 2)
            code = (
                int(status_parts[1]) if len(status_parts) > 1 and status_parts[1].isdigit() else 0
            )
            if 100 <= code < 200 and code != 101:
                continue  # interim responses are not relayed (we already answered Expect)
            break
        no_body = method == "HEAD" or code in (204, 304) or 100 <= code < 200
        content_type = (_header(headers, "content-type") or "").lower()
        is_sse = content_type.startswith("text/event-stream")
        length = _header(headers, "content-length")
        use_length = (
            length is not None
            and length.isdigit()
            and "chunked" not in _tokens(headers, "transfer-encoding")
        )

        out = [f"HTTP/1.1 {' '.join(status_parts[1:])}"]
        out += [f"{k}: {v}" for k, v in headers if k.lower() not in _HOP_BY_HOP]
        if no_body:
            if use_length:
                out.append(f"Content-Length: {length}")
        elif use_length and not is_sse:
            out.append(f"Content-Length: {length}")
        else:
            out.append("Transfer-Encoding: chunked")
        out += [f"Connection: {'close' if client_close else 'keep-alive'}", "", ""]
        writer.write("\r\n".join(out).encode("latin-1"))
        await writer.drain()
        if no_body:
            return not client_close

        pieces = _iter_body(up_reader, headers, until_close=True)
        chunked = not (use_length and not is_sse)
        if is_sse:
            await self._relay_sse(pieces, writer)
        else:
            async for piece in pieces:
                writer.write(b"%x\r\n%b\r\n" % (len(piece), piece) if chunked else piece)
                await writer.drain()
        if chunked:
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        return not client_close

    async def _relay_sse(self, pieces: AsyncIterator[bytes], writer: asyncio.StreamWriter) -> None:
        """Relay an event stream, adding a keep-alive comment after `interval` s of silence.

        One pending `anext()` task is kept across timeouts: cancelling a read midway through a
        chunk would lose bytes. Comments go only between events (after a blank line), never
        inside one.
        """
        at_boundary = True
        pending: asyncio.Task[bytes] = asyncio.ensure_future(anext(pieces))
        try:
            while True:
                done, _ = await asyncio.wait({pending}, timeout=self.interval)
                if not done:
                    if at_boundary:
                        writer.write(b"%x\r\n%b\r\n" % (len(KEEPALIVE_COMMENT), KEEPALIVE_COMMENT))
                        await writer.drain()
                    continue
                try:
                    piece = pending.result()
                except StopAsyncIteration:
                    return
                if piece:
                    at_boundary = piece.endswith((b"\n\n", b"\r\n\r\n"))
                    writer.write(b"%x\r\n%b\r\n" % (len(piece), piece))
                    await writer.drain()
                pending = asyncio.ensure_future(anext(pieces))
        finally:
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending


async def _serve_engine(
    command: Sequence[str], port: int, upstream_port: int, interval: float
) -> int:
    engine = subprocess.Popen(list(command))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, engine.send_signal, sig)
    proxy = KeepAliveProxy(LOOPBACK, upstream_port, interval)
    # awsvpc: the task ENI is the only interface the ALB reaches; bind all of them.
    server = await proxy.serve("0.0.0.0", port)
    try:
        status = await loop.run_in_executor(None, engine.wait)
    finally:
        server.close()
    # A signal death (negative status) becomes the shell convention 128 + signal number.
    return 128 - status if status < 0 else status


def serve_behind_proxy(
    command: Sequence[str], port: int, upstream_port: int, interval: float
) -> int:
    """Run the engine `command` (listening on `LOOPBACK:upstream_port`) and this proxy on
    `port` until the engine exits; return its exit status.

    SIGTERM and SIGINT (ECS stopping the task) are forwarded to the engine, which drains and
    exits; the proxy stops with it."""
    return asyncio.run(_serve_engine(command, port, upstream_port, interval))
