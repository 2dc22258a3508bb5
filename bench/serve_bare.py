"""The bare endpoint ``bench/bench_serve.py`` compares pin serve with: a trivial FastAPI app
whose one route, ``POST /api/v1/hosts/{host}/reports``, reads the whole body and answers 201
with a small JSON body, served exactly as ``pin serve`` serves (the same socket from
:func:`pinning.serve.server.bind`, uvicorn with uvloop, pin's bounded httptools protocol,
the same keep-alive, graceful-stop and garbage-collector settings). No token check, no
verification, no database: the floor the framework and server set.

Prints ``pin serve: listening on http://HOST:PORT (database none)`` once ready, as ``pin
serve`` does, and stops on SIGTERM.

Usage: ``python bench/serve_bare.py [PORT]`` (default 0: any free port)
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from fastapi import FastAPI, Request
from starlette.responses import Response

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def app() -> FastAPI:
    """The trivial FastAPI app (see the module docstring)."""
    bare = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)

    @bare.post("/api/v1/hosts/{host}/reports", status_code=201)
    async def report(host: str, request: Request) -> Response:
        body = await request.body()
        return Response(b'{"host":"%s","size":%d}' % (host.encode(), len(body)), 201,
                        media_type="application/json")

    return bare


def main(port: int) -> None:
    """Serve :func:`app` on 127.0.0.1:``port`` until SIGTERM."""
    import uvicorn

    from pinning.serve import server
    from pinning.serve.config import ServeConfig
    from pinning.serve.transport import protocol_class

    config = ServeConfig(host="127.0.0.1", port=port)
    sock = server.bind(config.host, config.port)
    protocol, _ = protocol_class(server.limits(config))
    uv = uvicorn.Config(app(), loop="uvloop", http=protocol, lifespan="on",
                        log_level="warning", access_log=False, server_header=False,
                        proxy_headers=False, timeout_keep_alive=config.keep_alive,
                        timeout_graceful_shutdown=server.GRACE_S)
    uvs = server._server_class()(uv)
    line = server.listening_line(sock, "none")
    server._settle_gc()
    with asyncio.Runner(loop_factory=server._loop()) as runner:
        runner.run(server._serve(uvs, sock, line, sys.stdout))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
