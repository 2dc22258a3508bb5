"""The ``#if`` expression evaluator of the platform guards (:mod:`pinning.audit.preproc`):
whether an AMD (ROCm) build takes a condition, given the macros an AMD build defines, the
file's own ``#define``\\ s and the project's build defines.

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
compiles is live. ``defined(X)`` of an unknown ``X`` is tried both ways (at most
:data:`MAX_UNKNOWN_DEFINED` such names): a condition that comes out the same either way is
decided; a bare unknown macro, an unknown function-like macro (``__has_include(...)``) or too
many unknowns leave the condition unknown.

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
from typing import Any

__all__ = ["AMD_DEFINED", "AMD_UNDEFINED", "MAX_UNKNOWN_DEFINED", "PLATFORM_MACROS", "evaluate",
           "words"]

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

_DEFINED = re.compile(r"\bdefined[ \t]*+(?:\([ \t]*+(\w++)[ \t]*+\)|(\w++))")
_KEYWORDS = {"true": 1, "false": 0}
_PUNCTUATION = str.maketrans({c: " " for c in "!\"#$%&'()*+,-./:;<=>?@[\\]^`{|}~"})


def words(expression: str) -> set[str]:
    """The identifiers and numbers of an ``#if`` expression (a set of strings)."""
    return set(expression.translate(_PUNCTUATION).split())


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
    names = words(expression)
    local = tuple(sorted((k, v) for k, v in (defines or {}).items() if k in names))
    unknown = unknown & names
    skipped = cuda_only & names
    host = _evaluate_pass(expression, local, unknown, skipped, device=False)
    if host is True or not names & _DEVICE_ONLY.keys():
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
