"""What the user asks for: ``--gpu``, ``--framework NAME[SPEC]``, ``--rocm``/``--cuda``,
``--os``, ``--model``, ``--as-of``, parsed into :class:`Constraints` (``UsageError``, exit 2,
for malformed flags).
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from pinning.errors import UsageError
from pinning.matrix.names import OS_ID_VERSION
from pinning.util.versions import specifier_problem

#: Other names users type for a framework -> the matrix name.
FRAMEWORK_ALIASES: dict[str, str] = {
    "torch": "pytorch",
    "tf": "tensorflow",
    "tensorflow-rocm": "tensorflow",
    "onnx-runtime": "onnxruntime",
    "onnxruntime-rocm": "onnxruntime",
    "flash-attn": "flash-attention",
    "flash_attn": "flash-attention",
    "flashattention": "flash-attention",
    "jaxlib": "jax",
}

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # the name at the start of --framework
# ORG/NAME@REVISION: two parts of the characters a Hugging Face repo id may hold, a 40-hex
# commit in either case (its other rules are checked by hub_id_problem).
_MODEL = re.compile(r"([A-Za-z0-9._-]{1,200})/([A-Za-z0-9._-]{1,200})@([0-9A-Fa-f]{40})")
HUB_ID_RULE = ("ORG/NAME, each part 1 to 96 characters of letters, digits, `-`, `_` and `.`, "
               "not starting or ending with `-` or `.`, without `--` or `..`, the name not "
               "ending in `.git`")
"""Hugging Face's repo id rule, as huggingface_hub checks it (``validate_repo_id`` in
``huggingface_hub/utils/_validators.py``, https://github.com/huggingface/huggingface_hub/blob/main/src/huggingface_hub/utils/_validators.py,
published_unknown: the file carries no date; read in huggingface_hub 2.4.0)."""


MAX_FLAG_CHARS = 512
"""The most characters a ``--framework`` value may have (a name and a specifier)."""


def _clip(text: str, limit: int = 80) -> str:
    """``repr(text)``, cut to ``limit`` characters with how many more there were."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text) - limit} characters more)"


@dataclass(frozen=True)
class FrameworkRequest:
    """One ``--framework NAME[SPEC]``: matrix name, PEP 440 specifier, and the raw text."""

    name: str
    spec: SpecifierSet
    raw: str

    def __str__(self) -> str:
        return f"{self.name}{self.spec}" if str(self.spec) else self.name


@dataclass(frozen=True)
class ModelRef:
    """A model: a Hugging Face ``id`` with its 40-hex commit ``revision``, or a local model
    folder ``path`` (as the user wrote it; ``id`` and ``revision`` then ``None``).
    """

    id: str | None = None
    revision: str | None = None
    path: str | None = None

    @property
    def text(self) -> str:
        """``ORG/NAME@REVISION`` or the folder path: the ``--model`` value that gives it."""
        return f"{self.id}@{self.revision}" if self.id is not None else str(self.path)


@dataclass(frozen=True)
class Constraints:
    """Everything the user asked for. ``os`` is ``(id, version)`` in os-release terms;
    ``frameworks`` are kept sorted by name, so the order of the flags does not matter.
    """

    gpu: str
    frameworks: tuple[FrameworkRequest, ...]
    rocm: SpecifierSet | None = None
    cuda: SpecifierSet | None = None
    os: tuple[str, str] | None = None
    model: ModelRef | None = None
    as_of: dt.date | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "frameworks",
                           tuple(sorted(self.frameworks, key=lambda f: f.name)))


def parse_framework(text: str, known: Sequence[str] = ()) -> FrameworkRequest:
    """Parse ``pytorch==2.13.0`` / ``pytorch>=2.12`` / ``jax~=0.10.0`` / ``pytorch``.

    ``known`` are the framework names of the matrix: an unknown name is a ``UsageError``
    with a "did you mean". A malformed specifier, or one past the version bounds of
    :mod:`pinning.util.versions` (64 characters, 18 digits a number), is a ``UsageError``
    (exit 2) naming ``--framework``.
    """
    flag = text.strip()
    m = _NAME.match(flag) if len(text) <= MAX_FLAG_CHARS else None
    spec_text = flag[m.end():].strip() if m else ""
    if m and specifier_problem(spec_text):
        raise UsageError(f"--framework {_clip(text)}: {specifier_problem(spec_text)}.",
                         hint="Examples: pytorch==2.13.0, pytorch>=2.12, jax~=0.10.0.")
    if not m:
        raise UsageError(
            f"--framework {_clip(text)}: expected NAME[SPEC], for example pytorch==2.13.0, "
            "pytorch>=2.12 or jax~=0.10.0."
        )
    name = m.group(0).lower().replace("_", "-")
    name = FRAMEWORK_ALIASES.get(name, name)
    try:
        spec = SpecifierSet(spec_text)
    except InvalidSpecifier as exc:
        hint = " Use `==` for an exact version." if re.match(r"^=[^=]", spec_text) else ""
        raise UsageError(
            f"--framework {_clip(text)}: {spec_text!r} is not a PEP 440 version specifier.{hint}",
            hint="Examples: pytorch==2.13.0, pytorch>=2.12, jax~=0.10.0.",
        ) from exc
    if known and name not in known:
        close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.5)
        mean = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise UsageError(
            f"--framework {_clip(text)}: no framework named {name!r} in the matrix.{mean}",
            hint=f"Known frameworks: {', '.join(known)}.",
        )
    return FrameworkRequest(name=name, spec=spec, raw=text)


def parse_runtime_spec(flag: str, text: str) -> SpecifierSet:
    """Parse ``--rocm``/``--cuda`` SPEC; a bare version means ``==VERSION``. Raises
    ``UsageError`` (exit 2) naming ``flag`` for a text that is not a specifier or is past
    the version bounds of :mod:`pinning.util.versions`.
    """
    problem = specifier_problem(text)
    if problem:
        raise UsageError(f"{flag} {_clip(text)}: {problem}.",
                         hint=f"Examples: {flag} 7.2.0, {flag} '>=7.0', {flag} '<7'.")
    t = text.strip()
    if re.fullmatch(r"[0-9]+(\.[0-9]+)*", t):
        t = f"=={t}" if t.count(".") >= 2 else f"=={t}.*"
    try:
        return SpecifierSet(t)
    except InvalidSpecifier as exc:
        raise UsageError(
            f"{flag} {_clip(text)}: not a PEP 440 version specifier.",
            hint=f"Examples: {flag} 7.2.0, {flag} '>=7.0', {flag} '<7'.",
        ) from exc


def hub_id_problem(org: str, name: str) -> str | None:
    """Why ``ORG/NAME`` breaks :data:`HUB_ID_RULE` (one phrase), or ``None`` when it holds.

    ``org`` and ``name`` are already made only of letters, digits, ``-``, ``_`` and ``.``.
    """
    for part in (org, name):
        if not 1 <= len(part) <= 96:
            return f"`{part[:100]}` is not 1 to 96 characters"
        if part[0] in "-." or part[-1] in "-.":
            return f"`{part}` starts or ends with `-` or `.`"
        if "--" in part or ".." in part:
            return f"`{part}` holds `--` or `..`"
    if name.endswith(".git"):
        return f"`{name}` ends in `.git`"
    return None


def parse_model(text: str) -> ModelRef:
    """Parse ``--model``: ``ORG/NAME@REVISION`` where REVISION is a 40-hex commit (upper-case
    hex is lower-cased) and ORG/NAME follows Hugging Face's rule (:data:`HUB_ID_RULE`), or a
    local model folder (a converted checkpoint): a path that starts with ``./``, ``../``,
    ``/`` or ``~``, or an existing directory. The path is kept as written (one trailing
    ``/`` dropped); ``pin resolve`` then anchors a relative one to the lock's folder. Else
    ``UsageError`` (exit 2): a malformed id or revision, a path with a control character or
    over 4096 characters, a path naming a file (a model is a folder).
    """
    text = text.strip()
    m = _MODEL.fullmatch(text) if not text.startswith(("./", "../", "/", "~")) else None
    if m:
        problem = hub_id_problem(m.group(1), m.group(2))
        if problem is not None:
            raise UsageError(f"--model {_clip(text)}: not a Hugging Face model id: {problem}.",
                             hint=f"A model id is {HUB_ID_RULE}; a local folder is written "
                                  "./PATH, /PATH or ~/PATH.")
        return ModelRef(id=f"{m.group(1)}/{m.group(2)}", revision=m.group(3).lower())
    path = text
    if path and len(path) <= 4096 and (
            path.startswith(("./", "../", "/", "~")) or _is_dir(path)):
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in path):
            raise UsageError(f"--model {_clip(text)}: a model folder path has no control "
                             "character.")
        if _is_file(path):
            raise UsageError(f"--model {_clip(text)}: names a file; a local model is the "
                             "folder that holds its files.",
                             hint="Give the model's folder (e.g. the folder holding "
                                  "config.json), not one of its files.")
        return ModelRef(path=path.rstrip("/") or "/")
    raise UsageError(
        f"--model {_clip(text)}: expected ORG/NAME@REVISION with a 40-hex commit revision, "
        "or a local model folder (./PATH, /PATH or ~/PATH).",
        hint="Find the commit on the model's Hugging Face page (Files and versions -> "
        "History); a branch name such as `main` moves and cannot be locked.",
    )


def _is_file(path: str) -> bool:
    """True when ``path`` (``~`` expanded) exists and is not a directory."""
    import os

    try:
        full = os.path.expanduser(path)
        return os.path.exists(full) and not os.path.isdir(full)
    except (OSError, ValueError, RuntimeError):
        return False


def _is_dir(path: str) -> bool:
    """True when ``path`` names an existing directory (``False`` when it cannot be told)."""
    import os

    try:
        return os.path.isdir(path)
    except (OSError, ValueError):
        return False


def parse_os(text: str) -> tuple[str, str]:
    """Parse ``--os ID-VERSION`` (os-release ``ID`` and ``VERSION_ID``), e.g. ``ubuntu-24.04``."""
    m = OS_ID_VERSION.match(text.strip().lower())
    if not m:
        raise UsageError(
            f"--os {_clip(text)}: expected ID-VERSION as in /etc/os-release, e.g. ubuntu-24.04, "
            "rhel-9.6, sles-15.7, debian-12."
        )
    return m.group(1), m.group(2)


def close_os(text: str, known: Sequence[str], n: int = 3) -> list[str]:
    """Did-you-mean for ``--os``: the entries of ``known`` (``ubuntu-24.04.3``) nearest to
    ``text`` (``ubunt-24.04``), compared with and without the point release; at most ``n``.
    """
    want = text.strip().lower()
    short = {re.sub(r"^([a-z0-9]+-[0-9]+(?:\.[0-9]+)?)\..*$", r"\1", k): k for k in known}
    hits = difflib.get_close_matches(want, list(known), n=n, cutoff=0.75)
    hits += [short[s] for s in difflib.get_close_matches(want, list(short), n=n, cutoff=0.75)]
    return list(dict.fromkeys(hits))[:n]
