"""Shared pydantic base classes (strict, frozen, kebab-case keys on the wire) and the
checked string types of values that reach an image build, a shell or a terminal.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from pinning.util.text import control_chars, escape_char, is_word, printable

# An environment variable name as POSIX shells and Dockerfile ENV accept it.
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
# Unicode categories a reason may not hold: controls, format characters, surrogates, line
# and paragraph separators.
_HIDDEN_REASON = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# A distribution name as PEP 508 allows it (any case; `.`, `_`, `-` inside).
DIST_NAME_PATTERN = r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$"


def kebab(name: str) -> str:
    """Map a Python field name to its TOML/JSON key (``min_driver`` -> ``min-driver``)."""
    return name.replace("_", "-")


class Strict(BaseModel):
    """Base of every wire model: unknown keys are errors, values are immutable.

    ``defer_build``: a model's validator and serializer are built on its first use, not
    when its module is imported, so a command pays only for the models it reads or writes.
    """

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        populate_by_name=True,
        alias_generator=kebab,
        validate_default=True,
        defer_build=True,
    )


def _one_line(value: str) -> str:
    """``value`` unchanged; ``ValueError`` naming the control characters it holds."""
    found = control_chars(value)
    if found:
        raise ValueError(f"control character {', '.join(found)} not allowed here")
    return value


def _script(value: str) -> str:
    """``value`` unchanged when its only control characters are line feed and tab."""
    found = control_chars(value, allow="\n\t")
    if found:
        raise ValueError(f"control character {', '.join(found)} not allowed in a build step")
    return value


def _token(value: str) -> str:
    """``value`` unchanged when it is one word (no whitespace, no control characters)."""
    if not is_word(value):
        raise ValueError("must be one word: no spaces, tabs, line breaks or control characters")
    return value


# Characters that render as nothing: a reason of only these (and blanks) says nothing.
_BLANK_LOOKING = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def _reason(value: str) -> str:
    """``value`` unchanged when it says something: some visible character, and no control,
    format (bidi, zero-width), surrogate or line/paragraph separator character.
    """
    hidden = [escape_char(ch) for ch in value if unicodedata.category(ch) in _HIDDEN_REASON]
    if hidden:
        raise ValueError(f"character {', '.join(dict.fromkeys(hidden))} not allowed in a "
                         "reason (one line of visible text)")
    if not any(not ch.isspace() and ch not in _BLANK_LOOKING for ch in value):
        raise ValueError("a reason must say why the value is unknown; it is empty")
    return value


def _exact_int(value: object) -> object:
    """``value`` unchanged unless it is a ``bool`` or ``float`` (which equal ``1`` in Python
    and would pass a ``Literal[1]`` check even in strict mode).
    """
    if isinstance(value, bool | float):
        raise ValueError(f"must be the integer 1, not {value!r}")
    return value


# A format version number (``lock-version``, ``host-version``, ``schema-version``): the
# integer 1 exactly, never ``true`` or ``1.0``.
FormatVersion = Annotated[Literal[1], BeforeValidator(_exact_int)]
# A value written into an image build or a shell as one quoted word: any text but control
# characters (C0, DEL, C1), so it cannot end a Dockerfile line or a command.
OneLine = Annotated[str, AfterValidator(_one_line)]
# An environment variable name (``HSA_OVERRIDE_GFX_VERSION``).
EnvName = Annotated[str, Field(pattern=ENV_NAME_PATTERN)]
# A shell script: text with line feeds and tabs, no other control character.
Script = Annotated[str, AfterValidator(_script)]
# Why a value is unknown: one line of text, never blank.
Reason = Annotated[str, AfterValidator(_reason)]
# One word: a version or other value pip reads from a requirements line.
Token = Annotated[str, AfterValidator(_token)]
# A PEP 508 distribution name.
DistName = Annotated[str, Field(pattern=DIST_NAME_PATTERN)]


def error_location(loc: Sequence[int | str], data: Any) -> str:
    """Render a pydantic error location as ``releases[3] (rocm 7.2.0).frameworks[0]``: list
    indexes in brackets, with the row's ``runtime version`` or ``id`` when ``data`` has one.
    """
    out = ""
    node: Any = data
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            try:
                node = node[part]
            except (IndexError, KeyError, TypeError):
                node = None
            if isinstance(node, dict) and "version" in node and "runtime" in node:
                out += f" ({node['runtime']} {node['version']})"
            elif isinstance(node, dict) and "id" in node:
                out += f" ({node['id']})"
        else:
            # A key may come from the file (an environment name): never print it raw.
            out += ("." if out else "") + printable(str(part), newlines=False)
            node = node.get(part) if isinstance(node, dict) else None
    return out


def validation_summary(exc: ValidationError, data: Any, *, limit: int = 5) -> str:
    """``field: problem; field: problem (and N more)`` for a file's validation errors,
    unknown fields first (they are the typos an author needs to see); a validator's own
    message without pydantic's ``Value error,`` prefix.
    """
    errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    parts = [f"{error_location(e['loc'], data) or '(top level)'}: "
             f"{e['msg'].removeprefix('Value error, ')}"
             for e in errors[:limit]]
    more = f" (and {len(errors) - limit} more)" if len(errors) > limit else ""
    return "; ".join(parts) + more
