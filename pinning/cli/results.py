"""What the acceptance, cost and report commands write with ``-o``: a model's JSON document
and the one atomic write that turns an unwritable path into exit 2. Not a command module
(it registers nothing), so those commands share it without importing one another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pinning.cli.options import cli_path
from pinning.errors import UsageError

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["json_bytes", "write_output"]


def json_bytes(model: BaseModel) -> bytes:
    """The JSON document ``-o`` writes for ``model`` (and ``--report-to`` posts): kebab-case
    keys, indented by one space, a final newline; UTF-8 bytes.
    """
    return (model.model_dump_json(by_alias=True, indent=1) + "\n").encode()


def write_output(output: str, data: bytes) -> None:
    """Write ``data`` to ``-o output`` atomically (``-``: standard output). Raises
    ``UsageError`` (exit 2) naming the path when it cannot be written.
    """
    from pinning.util.files import atomic_write_bytes

    try:
        atomic_write_bytes(cli_path(output), data)
    except OSError as exc:
        raise UsageError(f"-o {output}: cannot be written ({exc.strerror or exc}).") from exc
