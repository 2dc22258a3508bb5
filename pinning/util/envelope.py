"""The one JSON envelope every ``pin ... --format json`` prints on standard output.

``{"pin": version, "command": "lock diff", "ok": bool, "exit-code": int, "result": the
command's own JSON (or ``null``), "error": null | {"code", "kind", "message", "hint"}}``.
``ok`` is true exactly when ``exit-code`` is 0; a command whose result itself reports drift
(``pin verify``, ``pin doctor``, ``pin lock check``/``diff``) still carries it, with ``ok``
false. The models here only describe the shape (``schemas/envelope.schema.json``); the CLI
writes it (:mod:`pinning.cli.envelope`).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from pinning.util.models import Strict

__all__ = ["Envelope", "EnvelopeError", "unwrap"]


class EnvelopeError(Strict):
    """Why a command failed: its exit ``code``, the ``kind`` (the ``PinError`` class name,
    ``UsageError`` for a flag click refused), the ``message`` and the ``hint``.
    """

    code: int = Field(ge=1)
    kind: str
    message: str
    hint: str


class Envelope(Strict):
    """One ``--format json`` output: the pin ``version``, the ``command`` path without
    ``pin`` (``lock diff``), ``ok`` (exit code 0), the ``exit-code``, the command's
    ``result`` (its JSON, ``null`` when it failed before producing one) and the ``error``.
    """

    pin: str
    command: str
    ok: bool
    exit_code: int = Field(ge=0)
    result: Any
    error: EnvelopeError | None


def unwrap(data: Any, command: str) -> Any:
    """``data``'s ``result`` when ``data`` is an envelope ``command`` printed (so a file
    written by ``pin COMMAND --format json > FILE`` reads as the bare result), else ``data``.
    """
    if (isinstance(data, dict) and data.get("command") == command and "pin" in data
            and "result" in data and "exit-code" in data):
        return data["result"]
    return data
