"""Which branches of a C/C++/CUDA file's ``#if`` / ``#ifdef`` / ``#ifndef`` / ``#elif`` /
``#else`` / ``#endif`` an AMD (ROCm) build compiles: the platform guards of the kernel scanner.

Code that an AMD build never compiles is not a porting item: inline PTX under
``#ifndef USE_ROCM`` is a CUDA-only branch, already ported. :class:`Guards` follows the
directives of one text in order (the scanner of :mod:`pinning.audit.kernels` hands it each
directive it meets, outside comments and string literals) and says, for any offset after the
last directive, whether that code is live for AMD (``None`` from :meth:`Guards.at`), in a branch
an AMD build skips, or under a condition pin cannot decide (an unknown project macro).

What an AMD build defines (:data:`AMD_DEFINED`, :data:`AMD_UNDEFINED`):

* HIP's porting guide, "Compiler Defines for HIP and CUDA"
  (``ROCm/HIP@09e54c6b66d7ce09c3d287488721d27fc3d6133b:docs/how-to/hip_porting_guide.rst``):
  under ``amdclang++`` ``__HIP_PLATFORM_AMD__`` is defined, ``__HIPCC__`` and ``__HIP__`` are
  defined when compiling ``.hip`` files or with ``-x hip``, ``__HIP_DEVICE_COMPILE__`` is 1 on
  the device pass and undefined on the host pass; ``__HIP_PLATFORM_NVIDIA__``, ``__NVCC__``
  and ``__CUDA_ARCH__`` are undefined (on both passes).
* PyTorch's ROCm extension build (``torch/utils/cpp_extension.py``, ``COMMON_HIP_FLAGS``)
  passes ``-D__HIP_PLATFORM_AMD__=1 -DUSE_ROCM=1``; older releases passed
  ``-D__HIP_PLATFORM_HCC__=1`` (the platform macro's former name) with ``-DUSE_ROCM=1``.
* PyTorch hipifies CUDA sources before a ROCm build, and HIPIFY renames ``__CUDACC__`` to
  ``__HIPCC__`` (HIPIFY's CUDA Driver API table, row ``__CUDACC__``, HIP 1.6.0), so
  ``__CUDACC__`` counts as defined.

Each condition is evaluated for the host pass and the device pass; a branch either pass
compiles is live. Any other macro is unknown unless the file itself ``#define``\\ s it: in
live code it is defined (with its value when that is an integer); defined only in branches an
AMD build skips (``#if __CUDA_ARCH__ >= 530`` / ``#define PTX_AVAILABLE``) it is undefined for
AMD; ``#ifndef X`` directly followed by ``#define X`` (an include guard, or a default value)
is taken. Macros another file or the build defines (setup.py / CMake ``-D`` flags) are not
followed yet: they stay unknown. ``defined(X)`` of an unknown ``X`` is tried both ways (at
most :data:`MAX_UNKNOWN_DEFINED` such names): a condition that comes out the same either way
is decided; a bare unknown macro, an unknown function-like macro (``__has_include(...)``) or
too many unknowns leave the condition unknown.

Why the walk is pin's own and only the expressions are pcpp's (``pcpp.evaluator``, the
C99 ``#if`` expression evaluator of the pure-Python preprocessor pcpp): running pcpp's
preprocessor over a file lexes and macro-expands every token with a Python lexer and follows
``#include`` into headers that are not there, while the scanner needs only the directives and
their branches, read in its own single pass (the audit must stay within 2x ``grep -rE`` on a
large tree); evaluating C's integer promotions, short-circuits and ``?:`` is pcpp's job.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AMD_DEFINED", "AMD_UNDEFINED", "MAX_UNKNOWN_DEFINED", "PLATFORM_MACROS", "Guard",
           "Guards", "evaluate"]

AMD_DEFINED: dict[str, int] = {
    "USE_ROCM": 1, "__HIP_PLATFORM_AMD__": 1, "__HIP_PLATFORM_HCC__": 1, "__HIPCC__": 1,
    "__HIP__": 1, "__CUDACC__": 1}
"""Macros an AMD build of a PyTorch extension defines on both passes, with their values."""
AMD_UNDEFINED = frozenset({"__CUDA_ARCH__", "__NVCC__", "__HIP_PLATFORM_NVIDIA__"})
"""Macros an AMD build leaves undefined on both passes."""
PLATFORM_MACROS = frozenset({
    "USE_ROCM", "__HIP_PLATFORM_AMD__", "__HIP_PLATFORM_HCC__", "__HIPCC__", "__HIP__",
    "__HIP_PLATFORM_NVIDIA__", "__NVCC__"})
"""Macros that name a platform: a branch they decide was written for ROCm or for CUDA on
purpose."""
_DEFINED_ANY_VALUE: dict[str, int | None] = {"__cplusplus": None, "__clang__": None}
"""Defined by amdclang++ (a Clang that compiles HIP as C++) with a value pin does not fix."""
_DEVICE_ONLY = {"__HIP_DEVICE_COMPILE__": 1}
MAX_UNKNOWN_DEFINED = 3
"""How many distinct ``defined(X)`` of unknown macros one condition may hold and still be
decided by trying each both ways (2**3 evaluations per pass)."""
MAX_EXPRESSION = 2000
"""How much of a directive is read (characters, continuation lines included)."""

_DEFINED = re.compile(r"\bdefined[ \t]*+(?:\([ \t]*+(\w++)[ \t]*+\)|(\w++))")
_COMMENT = re.compile(r"/\*(?:[^*]|\*(?!/))*+(?:\*/)?|//[^\n]*+")
_NOT_DEFINED = re.compile(r"![ \t]*+defined[ \t]*+\(?[ \t]*+(\w++)[ \t]*+\)?")
_KEYWORDS = {"true": 1, "false": 0}
_PUNCTUATION = str.maketrans({c: " " for c in "!\"#$%&'()*+,-./:;<=>?@[\\]^`{|}~"})


@dataclass(frozen=True)
class Guard:
    """The branch that decides a stretch of code: ``live`` is ``False`` for a branch an AMD
    build skips, ``None`` for one under a condition pin cannot decide; ``directive`` is how the
    branch reads (``#ifndef USE_ROCM``, ``#else of #ifdef USE_ROCM``) and ``line`` its 1-based
    line.
    """

    live: bool | None
    directive: str
    line: int
    platform: bool = False

    def settles(self) -> bool:
        """True when the AMD build skipping this branch leaves nothing to port; false when
        only ``__CUDA_ARCH__`` (undefined under HIP-Clang) skips it: the AMD build compiles
        the other branch (often a stub) instead, so the item stays.
        """
        names = _words(self.directive)
        return self.live is False and (self.platform or "__CUDA_ARCH__" not in names)

    def note(self) -> str:
        """One clause for a finding's ``why``: "already ported" only where a platform macro
        (:data:`PLATFORM_MACROS`) decides the branch, i.e. the project wrote a ROCm / HIP path
        on purpose; a branch skipped because ``__CUDA_ARCH__`` is undefined under HIP-Clang
        is CUDA-only but porting that guard may bring it back; ``#if 0`` is never compiled.
        """
        names = _words(self.directive) - {"if", "elif", "else", "of", "true", "false"}
        where = f"{self.directive} (line {self.line})"
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


@dataclass
class Guards:
    """The directive walk of one text (offsets only grow): :meth:`directive` for each
    ``#if``-family / ``#define`` / ``#undef`` directive, :meth:`at` for the branch deciding an
    offset. Pure; never raises for any text.
    """

    text: str
    frames: list[_Frame] = field(default_factory=list)
    defines: dict[str, int | None] = field(default_factory=dict)
    unknown: set[str] = field(default_factory=set)
    cuda_only: set[str] = field(default_factory=set)
    since: int = 0
    current: Guard | None = None
    before: Guard | None = None
    _line: int = 1
    _line_at: int = 0
    _last: str = ""

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

    def _open(self, name: str, rest: str, line: int) -> None:
        word = rest.split()[0] if rest.split() else ""
        expression = {"if": rest, "ifdef": f"defined({word})",
                      "ifndef": f"!defined({word})"}[name]
        cond = self._evaluate(expression)
        bare = _NOT_DEFINED.fullmatch(expression.strip())
        ifndef = bare.group(1) if bare else None
        text = f"#{name} {' '.join(rest.split()) if name == 'if' else word}"[:120]
        platform = bool(_words(expression) & PLATFORM_MACROS)
        self.frames.append(_Frame(cond, cond, Guard(cond, text, line, platform), text, ifndef,
                                  platform))

    def _next(self, name: str, rest: str, line: int) -> None:
        frame = self.frames[-1]
        head = frame.head
        if name == "else":
            state = _not(frame.prior)
            frame.state, frame.prior = state, True
            frame.guard = Guard(state, f"#else of {head}", line, frame.platform)
            return
        cond = self._evaluate(rest)
        state = _and(_not(frame.prior), cond)
        frame.state, frame.prior = state, _or(frame.prior, cond)
        frame.platform = frame.platform or bool(_words(rest) & PLATFORM_MACROS)
        frame.guard = Guard(state, f"#elif {' '.join(rest.split())}"[:120], line,
                            frame.platform)
        frame.ifndef = None

    def _evaluate(self, expression: str) -> bool | None:
        words = _words(expression)  # the file's macro tables filtered to the expression's
        defines = {w: self.defines[w] for w in words if w in self.defines}
        unknown = frozenset(w for w in words if w in self.unknown)
        skipped = frozenset(w for w in words if w in self.cuda_only and w not in defines
                            and w not in unknown)
        return evaluate(expression, defines, unknown, skipped)

    def _define(self, name: str, rest: str, last: str) -> None:
        words = rest.split(None, 1)
        macro = words[0].split("(")[0] if words else ""
        if not macro.isidentifier():
            return
        frame = self.frames[-1] if self.frames else None
        if (name == "define" and frame is not None and frame.state is None
                and frame.ifndef == macro and last in ("if", "ifndef")):
            frame.state = frame.prior = True
            frame.guard = Guard(True, frame.guard.directive, frame.guard.line, frame.platform)
            self.current = self._effective()
        live = self.current.live if self.current is not None else True
        if live is False:
            if name == "define":
                self.cuda_only.add(macro)
            return
        if live is None:
            self.unknown.add(macro)
            self.defines.pop(macro, None)
        elif name == "undef":
            self.defines.pop(macro, None)
            self.unknown.discard(macro)
        else:
            value = words[1].strip() if len(words) > 1 and "(" not in words[0] else ""
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


def _words(expression: str) -> set[str]:
    """The identifiers and numbers of an expression."""
    return set(expression.translate(_PUNCTUATION).split())


def _not(value: bool | None) -> bool | None:
    return None if value is None else not value


def _and(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


@functools.cache
def _evaluator() -> Any:
    from pcpp.evaluator import Evaluator  # type: ignore[import-untyped]  # no stubs

    return Evaluator()


def evaluate(expression: str, defines: dict[str, int | None] | None = None,
             unknown: frozenset[str] = frozenset(),
             cuda_only: frozenset[str] = frozenset()) -> bool | None:
    """Whether an AMD build takes ``#if expression``: ``True`` when the host or the device
    pass does, ``False`` when neither does, ``None`` when pin cannot tell (an unknown macro
    decides it). ``defines`` are the file's own ``#define``\\ s seen in live code (``None`` for
    a value that is not an integer); ``unknown`` are macros the file defines under an unknown
    condition; ``cuda_only`` are macros the file defines only in branches an AMD build skips
    (undefined for AMD). Never raises: an expression pcpp cannot parse is unknown.
    """
    words = _words(expression)
    local = tuple(sorted((k, v) for k, v in (defines or {}).items() if k in words))
    unknown = unknown & words
    skipped = cuda_only & words
    host = _evaluate_pass(expression, local, unknown, skipped, device=False)
    if host is True or not words & _DEVICE_ONLY.keys():
        return host  # the device pass differs only in __HIP_DEVICE_COMPILE__
    device = _evaluate_pass(expression, local, unknown, skipped, device=True)
    if device is True:
        return True
    return False if host is False and device is False else None


@functools.lru_cache(maxsize=4096)
def _evaluate_pass(expression: str, local: tuple[tuple[str, int | None], ...],
                   unknown: frozenset[str], cuda_only: frozenset[str], *,
                   device: bool) -> bool | None:
    known: dict[str, int | None] = {**_DEFINED_ANY_VALUE, **AMD_DEFINED,
                                    **(_DEVICE_ONLY if device else {}),
                                    **dict(local)}
    undefined = {*AMD_UNDEFINED, *cuda_only, *(() if device else _DEVICE_ONLY)}
    open_names: list[str] = []

    def name_of(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name in known:
            return " 1 "
        if name in undefined and name not in unknown:
            return " 0 "
        if name not in open_names:
            open_names.append(name)
        return f" __pin_defined_{open_names.index(name)} "

    text = _DEFINED.sub(name_of, expression)
    if len(open_names) > MAX_UNKNOWN_DEFINED:
        return None
    identifiers: dict[str, int] = {**_KEYWORDS, **{k: v for k, v in known.items()
                                                  if v is not None}}
    identifiers.update({name: 0 for name in undefined if name not in unknown})
    simple = text.replace("!", " ").split()
    if len(simple) == 1 and len(open_names) == 1 and simple[0] == "__pin_defined_0":
        return None  # ``defined(X)`` / ``!defined(X)`` of one unknown macro
    value = {**identifiers, "0": 0, "1": 1}.get(simple[0]) if len(simple) == 1 else None
    if value is not None and text.count("!") < 2:
        return bool(value) != ("!" in text)  # ``X``, ``defined(X)``, ``!defined(X)``
    results = set()
    for bits in range(2 ** len(open_names)):
        for i in range(len(open_names)):
            identifiers[f"__pin_defined_{i}"] = (bits >> i) & 1
        results.add(_run(text, identifiers))
        if len(results) > 1:
            return None
    return results.pop() if results else None


def _run(text: str, identifiers: dict[str, int]) -> bool | None:
    try:
        value = _evaluator()(text, identifiers=identifiers)
    except Exception:  # pcpp raises SyntaxError and others on input it cannot parse
        return None
    number = getattr(value, "value", None)
    if getattr(value, "exception", None) is not None or not callable(number):
        return None  # an unknown macro was needed, or not an integer (a string literal)
    return bool(number())
