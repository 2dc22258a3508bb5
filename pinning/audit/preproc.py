"""Which branches of a C/C++/CUDA file's ``#if`` / ``#ifdef`` / ``#ifndef`` / ``#elif`` /
``#else`` / ``#endif`` an AMD (ROCm) build compiles: the platform guards of the kernel scanner.

Code that an AMD build never compiles is not a porting item: inline PTX under
``#ifndef USE_ROCM`` is a CUDA-only branch, already ported. :class:`Guards` follows the
directives of one text in order (the scanner of :mod:`pinning.audit.kernels` hands it each
directive it meets, outside comments and string literals) and says, for any offset after the
last directive, whether that code is live for AMD (``None`` from :meth:`Guards.at`), in a branch
an AMD build skips, or under a condition pin cannot decide (an unknown project macro).

The conditions are evaluated by :func:`pinning.audit.preproc_eval.evaluate` (the macros hipcc
and PyTorch's ROCm build define, and pcpp's expression evaluator). Any other macro is unknown
unless the file itself or the project's build ``#define``\\ s it: in live code it is defined
(with its value when that is an integer); defined only in branches an AMD build skips (``#if
__CUDA_ARCH__ >= 530`` / ``#define PTX_AVAILABLE``) it is undefined for AMD; ``#ifndef X``
directly followed by ``#define X`` (an include guard, or a default value) is taken. The
project's build defines (setup.py ``define_macros`` / ``-D`` flags, CMake
``add_compile_definitions`` ..., read by :mod:`pinning.audit.build_defines`) come in as
:class:`~pinning.audit.project_defines.ProjectDefine`\\ s: defined for an AMD build, or set
only for CUDA builds (undefined for AMD); a macro the build defines only on one platform is a
platform macro like ``USE_ROCM``, and a finding it settles names where it was defined.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from pinning.audit.preproc_eval import PLATFORM_MACROS, evaluate, words
from pinning.audit.project_defines import ProjectDefine
from pinning.audit.tristate import and3 as _and
from pinning.audit.tristate import not3 as _not
from pinning.audit.tristate import or3 as _or

__all__ = ["Guard", "Guards"]

MAX_EXPRESSION = 2000
"""How much of a directive is read (characters, continuation lines included)."""

_COMMENT = re.compile(r"/\*(?:[^*]|\*(?!/))*+(?:\*/)?|//[^\n]*+")
_NOT_DEFINED = re.compile(r"![ \t]*+defined[ \t]*+\(?[ \t]*+(\w++)[ \t]*+\)?")


@dataclass(frozen=True)
class Guard:
    """The branch that decides a stretch of code: ``live`` is ``False`` for a branch an AMD
    build skips, ``None`` for one under a condition pin cannot decide; ``directive`` is how the
    branch reads (``#ifndef USE_ROCM``, ``#else of #ifdef USE_ROCM``) and ``line`` its 1-based
    line; ``platform`` is true when a platform macro decides it; ``origin`` says where the
    project's build sets the macros it names (empty when it names none).
    """

    live: bool | None
    directive: str
    line: int
    platform: bool = False
    origin: str = ""

    def settles(self) -> bool:
        """True when the AMD build skipping this branch leaves nothing to port; false when
        only ``__CUDA_ARCH__`` (undefined under HIP-Clang) skips it: the AMD build compiles
        the other branch (often a stub) instead, so the item stays.
        """
        names = words(self.directive)
        return self.live is False and (self.platform or "__CUDA_ARCH__" not in names)

    def note(self) -> str:
        """One clause for a finding's ``why``: "already ported" only where a platform macro
        (:data:`PLATFORM_MACROS`) decides the branch, i.e. the project wrote a ROCm / HIP path
        on purpose; a branch skipped because ``__CUDA_ARCH__`` is undefined under HIP-Clang
        is CUDA-only but porting that guard may bring it back; ``#if 0`` is never compiled.
        """
        names = words(self.directive) - {"if", "elif", "else", "of", "true", "false"}
        where = f"{self.directive} (line {self.line})"
        return self._note(names, where) + (f" ({self.origin})" if self.origin else "")

    def _note(self, names: set[str], where: str) -> str:
        if self.live is False and not any(n[0].isalpha() or n[0] == "_" for n in names):
            return f"never compiled: {where} is false everywhere"
        if self.live is False and self.platform:
            return f"CUDA-only branch, already ported: {where} is not compiled for AMD"
        if self.live is False and "__CUDA_ARCH__" in names:
            return (f"CUDA-only branch: {where} is false for an AMD build, which compiles "
                    "the other branch instead; porting this item means giving AMD a path")
        if self.live is False:
            return f"not compiled for AMD: {where} is false for an AMD build"
        return f"under {self.directive} (line {self.line}) (unknown for an AMD build)"


@dataclass
class _Frame:
    state: bool | None
    prior: bool | None
    guard: Guard
    head: str
    ifndef: str | None = None
    platform: bool = False
    origin: str = ""


@dataclass
class Guards:
    """The directive walk of one text (offsets only grow): :meth:`directive` for each
    ``#if``-family / ``#define`` / ``#undef`` directive, :meth:`at` for the branch deciding an
    offset. ``project`` are the project's build defines (:class:`ProjectDefine`): defined
    for an AMD build, set only for CUDA builds (undefined for AMD) or undecided (unknown).
    Pure; never raises for any text.
    """

    text: str
    project: tuple[ProjectDefine, ...] = ()
    frames: list[_Frame] = field(default_factory=list)
    defines: dict[str, int | None] = field(default_factory=dict)
    unknown: set[str] = field(default_factory=set)
    cuda_only: set[str] = field(default_factory=set)
    platform_skipped: dict[str, str] = field(default_factory=dict)
    included: list[ProjectDefine] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    resolve: Callable[[str], tuple[ProjectDefine, ...]] | None = None
    since: int = 0
    current: Guard | None = None
    before: Guard | None = None
    _line: int = 1
    _line_at: int = 0
    _last: str = ""
    _origins: dict[str, ProjectDefine] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for define in self.project:
            self._origins[define.name] = define
            if define.rocm is True:
                self.defines[define.name] = define.value
            elif define.rocm is False:
                self.cuda_only.add(define.name)

    def at(self, offset: int) -> Guard | None:
        """The innermost skipped branch holding ``offset`` (else the innermost undecided one),
        or ``None`` when an AMD build compiles it. An offset on the directive line itself
        belongs to the code around the directive.
        """
        return self.before if offset < self.since else self.current

    def hash_line(self, start: int, end: int) -> None:
        """The scanner matched ``#`` and a directive name at ``start:end`` (outside comments
        and literals): a directive when only blanks precede it on its line.
        """
        line_start = self.text.rfind("\n", max(0, start - 200), start) + 1
        if self.text[line_start:start].strip(" \t\r\f\v") or start - line_start >= 200:
            return
        name = self.text[start + 1:end].lstrip(" \t")
        self.directive(name, start, end)

    def directive(self, name: str, start: int, rest_at: int) -> None:
        """A directive ``name`` (``if``, ``ifdef``, ``ifndef``, ``elif``, ``else``, ``endif``,
        ``define``, ``undef``) at offset ``start``; its operands begin at ``rest_at``.
        """
        last, self._last = self._last, name
        if name == "endif":
            if self.frames:
                self.frames.pop()
                self.before, self.since = self.current, rest_at
                self.current = self._effective()
            return
        rest, end = _logical_line(self.text, rest_at)
        if name in ("define", "undef"):
            self._define(name, rest, last)
            return
        line = self._line_of(start)
        if name in ("if", "ifdef", "ifndef"):
            self._open(name, rest, line)
        elif name in ("elif", "else") and self.frames:
            self._next(name, rest, line)
        self.before, self.since = self.current, end
        self.current = self._effective()

    def include(self, defines: tuple[ProjectDefine, ...]) -> None:
        """Take what an included header defines (:mod:`pinning.audit.header_defines`): a
        define an AMD build has is defined here (unless this text already decided the name),
        one set for CUDA builds only is undefined for AMD and a platform macro named by the
        header line. Kept in :attr:`included` for a header that includes this one.
        """
        for define in defines:
            if define.name in self.defines or define.name in self.unknown:
                continue
            self.included.append(define)
            if define.rocm is True:
                self.defines[define.name] = define.value
            elif define.rocm is False:
                self.cuda_only.add(define.name)
                self._origins.setdefault(define.name, define)

    def _open(self, name: str, rest: str, line: int) -> None:
        word = rest.split()[0] if rest.split() else ""
        expression = {"if": rest, "ifdef": f"defined({word})",
                      "ifndef": f"!defined({word})"}[name]
        cond = self._evaluate(expression)
        bare = _NOT_DEFINED.fullmatch(expression.strip())
        ifndef = bare.group(1) if bare else None
        text = f"#{name} {' '.join(rest.split()) if name == 'if' else word}"[:120]
        platform, origin = self._platform(expression)
        self.frames.append(_Frame(cond, cond, Guard(cond, text, line, platform, origin), text,
                                  ifndef, platform, origin))

    def _next(self, name: str, rest: str, line: int) -> None:
        frame = self.frames[-1]
        head = frame.head
        if name == "else":
            state = _not(frame.prior)
            frame.state, frame.prior = state, True
            frame.guard = Guard(state, f"#else of {head}", line, frame.platform, frame.origin)
            return
        cond = self._evaluate(rest)
        state = _and(_not(frame.prior), cond)
        frame.state, frame.prior = state, _or(frame.prior, cond)
        platform, origin = self._platform(rest)
        frame.platform = frame.platform or platform
        frame.origin = "; ".join(o for o in (frame.origin, origin) if o)
        frame.guard = Guard(state, f"#elif {' '.join(rest.split())}"[:120], line,
                            frame.platform, frame.origin)
        frame.ifndef = None

    def _platform(self, expression: str) -> tuple[bool, str]:
        """Whether a platform macro (:data:`PLATFORM_MACROS`, or one the project's build sets
        on one platform only) occurs in ``expression``, and where the build sets the
        expression's project macros (``USE_ROCM is defined for ROCm builds by setup.py:78``).
        """
        names = words(expression)
        project = [self._origins[n] for n in sorted(names & self._origins.keys())]
        platform = bool(names & PLATFORM_MACROS) or any(d.platform for d in project)
        return platform, "; ".join(d.note() for d in project[:2])

    def _evaluate(self, expression: str) -> bool | None:
        """The condition for an AMD build; an undecided one first takes what the headers in
        :attr:`pending` (``#include "x.h"`` met so far) define, through :attr:`resolve`, so a
        header is read only when a file's condition needs it.
        """
        value = self._evaluate_now(expression)
        if value is None and self.pending and self.resolve is not None:
            pending, self.pending = self.pending, []
            for name in pending:
                self.include(self.resolve(name))
            value = self._evaluate_now(expression)
        return value

    def _evaluate_now(self, expression: str) -> bool | None:
        names = words(expression)  # the file's macro tables filtered to the expression's
        defines = {w: self.defines[w] for w in names if w in self.defines}
        unknown = frozenset(w for w in names if w in self.unknown)
        skipped = frozenset(w for w in names if w in self.cuda_only and w not in defines
                            and w not in unknown)
        return evaluate(expression, defines, unknown, skipped)

    def _define(self, name: str, rest: str, last: str) -> None:
        parts = rest.split(None, 1)
        macro = parts[0].split("(")[0] if parts else ""
        if not macro.isidentifier():
            return
        frame = self.frames[-1] if self.frames else None
        if (name == "define" and frame is not None and frame.state is None
                and frame.ifndef == macro and last in ("if", "ifndef")):
            frame.state = frame.prior = True
            frame.guard = replace(frame.guard, live=True)
            self.current = self._effective()
        live = self.current.live if self.current is not None else True
        if live is False:
            if name == "define":
                self.cuda_only.add(macro)
                if self.current is not None and self.current.platform:
                    self.platform_skipped.setdefault(macro, self.current.directive)
            return
        if live is None:
            self.unknown.add(macro)
            self.defines.pop(macro, None)
        elif name == "undef":
            self.defines.pop(macro, None)
            self.unknown.discard(macro)
        else:
            value = parts[1].strip() if len(parts) > 1 and "(" not in parts[0] else ""
            self.defines[macro] = _int_value(_COMMENT.sub(" ", value).strip())
            self.unknown.discard(macro)

    def _effective(self) -> Guard | None:
        unknown: Guard | None = None
        for frame in self.frames:
            if frame.state is False:
                return frame.guard
            if frame.state is None and unknown is None:
                unknown = frame.guard
        return unknown

    def _line_of(self, offset: int) -> int:
        self._line += self.text.count("\n", self._line_at, offset)
        self._line_at = offset
        return self._line


def _logical_line(text: str, at: int) -> tuple[str, int]:
    """The directive's operands from ``at`` to the end of its logical line (continuation
    lines joined, at most :data:`MAX_EXPRESSION` characters), with comments removed, and the
    offset where the logical line ends.
    """
    limit = min(len(text), at + MAX_EXPRESSION)
    end = at
    while True:
        nl = text.find("\n", end, limit)
        if nl < 0:
            end = limit
            break
        if text[max(at, nl - 2):nl].rstrip("\r").endswith("\\"):
            end = nl + 1
            continue
        end = nl
        break
    raw = text[at:end].replace("\\\r\n", " ").replace("\\\n", " ")
    return _COMMENT.sub(" ", raw), end


def _int_value(value: str) -> int | None:
    """An integer literal's value (``1``, ``0x10``, ``800L``), else ``None``."""
    try:
        return int(value.rstrip("uUlL"), 0)
    except ValueError:
        return None
