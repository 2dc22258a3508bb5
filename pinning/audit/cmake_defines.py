"""The C/C++ macros a project's ``CMakeLists.txt`` / ``*.cmake`` define, for an AMD (ROCm)
build or for CUDA builds only, read statically (CMake is never run).

Read: ``add_compile_definitions(X Y=2)``, ``add_definitions(-DX)``,
``target_compile_definitions(tgt PRIVATE X)`` and ``-DX`` words in any other command's
arguments (``list(APPEND GPU_FLAGS "-DUSE_ROCM")``, ``set(CMAKE_CXX_FLAGS "... -DX")``);
not in ``execute_process``, ``ExternalProject_Add``, custom commands or ``message``, not
``-DCMAKE_*`` (cache variables for a nested CMake) and not generator expressions (``$<...>``).
A flag put into a variable named for CUDA (``CMAKE_CUDA_FLAGS``, ``CUDA_NVCC_FLAGS``) is for
CUDA builds only, one named for HIP for ROCm builds. Each define takes the enclosing
``if()`` / ``elseif()`` / ``else()`` tests: ``if(HIP_FOUND)``, ``if(USE_ROCM)``, ``if(HIP)``,
``if(${GPU_LANG} STREQUAL "HIP")`` hold on ROCm builds only; ``CUDA_FOUND``,
``CUDAToolkit_FOUND``, ``USE_CUDA``, ``STREQUAL "CUDA"`` on CUDA builds only; ``NOT``,
``AND`` and ``OR`` combine them; any other test is undecided unless a GPU test beside it
decides (as in :mod:`pinning.audit.setup_defines`).

Why a reader of pin's own rather than a CMake parser library (cmake-parser, cmake-format's
parser): CMake's command syntax (``name(args)``, quoted and bracket arguments, ``#``
comments) takes a few dozen lines to read, and no such library evaluates ``if()`` tests for
a platform, which is the part that matters here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from pinning.audit.project_defines import NEVER, ProjectDefine, scope_of
from pinning.audit.tristate import and3 as _and
from pinning.audit.tristate import not3 as _not
from pinning.audit.tristate import or3 as _or

__all__ = ["MAX_DEFINES", "cmake_defines"]

MAX_DEFINES = 500
"""At most this many defines are read from one file."""

_COMMAND = re.compile(r"#\[(=*+)\[|#[^\n]*+|([A-Za-z_]\w*+)[ \t]*+\(")
_WORD = re.compile(r'"(?:[^"\\]|\\.)*+"|\[(=*+)\[|[^\s()"#]++|#')
_SKIP = frozenset({"execute_process", "externalproject_add", "add_custom_command",
                   "add_custom_target", "message", "fetchcontent_declare", "install",
                   "configure_file", "find_package", "project"})
_KEYWORDS = frozenset({"PRIVATE", "PUBLIC", "INTERFACE", "BEFORE"})
_ROCM_WORD = re.compile(r"(?:^|_)(?:HIP|ROCM|ROCm)(?:_|$)")
_CUDA_WORD = re.compile(r"(?:^|_)CUDA(?:Toolkit)?(?:_|$)")
Value = tuple[bool | None, bool | None]
"""A test's value on a ROCm build and on a CUDA build (``None``: undecided)."""


def cmake_defines(text: str, display: str) -> list[ProjectDefine]:
    """The defines of the CMake source ``text`` (shown as ``display``), in file order. Never
    raises for any text.
    """
    if "-D" not in text and "definitions" not in text.lower():
        return []
    out: list[ProjectDefine] = []
    frames: list[list[Value]] = []  # per open if(): the value of each branch so far
    for name, args, line in _commands(text):
        low = name.lower()
        if low == "if":
            frames.append([_test(args)])
        elif low == "elseif" and frames:
            frames[-1].append(_test(args))
        elif low == "else" and frames:
            frames[-1].append((True, True))
        elif low == "endif" and frames:
            frames.pop()
        elif low not in _SKIP:
            for macro, value, extra in _defines(low, args):
                rocm, scope = _scope(frames, extra)
                if scope != NEVER:
                    out.append(ProjectDefine(macro, value, rocm, scope, f"{display}:{line}"))
            if len(out) >= MAX_DEFINES:
                break
    return out


def _commands(text: str) -> Iterator[tuple[str, list[str], int]]:
    """``(command name, arguments, 1-based line)`` of each command, comments skipped."""
    pos, line, n = 0, 1, len(text)
    while pos < n:
        m = _COMMAND.search(text, pos)
        if m is None:
            return
        line += text.count("\n", pos, m.start())
        pos = m.end()
        if m.group(1) is not None:  # a bracket comment #[[ ... ]]
            end = text.find(f"]{m.group(1)}]", pos)
            pos = n if end < 0 else end + len(m.group(1)) + 2
        elif m.group(2) is not None:
            args, end = _arguments(text, pos)
            yield m.group(2), args, line
            line += text.count("\n", pos, end)
            pos = end
        line += text.count("\n", m.start(), m.end())


def _arguments(text: str, pos: int) -> tuple[list[str], int]:
    """The arguments from ``pos`` (after ``(``) to the matching ``)``, and the offset after
    it; quoted arguments unquoted, at most 64 KiB read.
    """
    args: list[str] = []
    depth, limit = 1, min(len(text), pos + 65536)
    while pos < limit:
        ch = text[pos]
        if ch in " \t\r\n":
            pos += 1
        elif ch == "(":
            depth, pos = depth + 1, pos + 1
        elif ch == ")":
            depth, pos = depth - 1, pos + 1
            if depth == 0:
                return args, pos
        else:
            m = _WORD.match(text, pos, limit)
            if m is None:
                return args, limit
            word, pos = m.group(), m.end()
            if word == "#":
                nl = text.find("\n", pos, limit)
                pos = limit if nl < 0 else nl
            elif m.group(1) is not None:
                end = text.find(f"]{m.group(1)}]", pos, limit)
                stop = limit if end < 0 else end
                args.append(text[pos:stop])
                pos = stop + len(m.group(1)) + 2
            else:
                args.append(word[1:-1] if word.startswith('"') else word)
    return args, limit


def _defines(command: str, args: list[str]) -> Iterator[tuple[str, int | None, Value]]:
    """``(name, value, extra)`` per macro the command defines; ``extra`` is the platform a
    flag variable is named for (``(False, True)`` for ``CMAKE_CUDA_FLAGS``).
    """
    extra: Value = (True, True)
    bare = command in ("add_compile_definitions", "target_compile_definitions")
    words = args[1:] if command == "target_compile_definitions" else args
    if command in ("set", "list", "string") and args:
        target = args[1] if command in ("list", "string") and len(args) > 1 else args[0]
        if _CUDA_WORD.search(target) and not _ROCM_WORD.search(target):
            extra = (False, True)
        elif _ROCM_WORD.search(target):
            extra = (True, False)
    for arg in words:
        for word in arg.replace(";", " ").split():
            if "$<" in word or word in _KEYWORDS:
                continue
            if word.startswith("-D"):
                word = word[2:]
            elif not bare:
                continue
            name, _, raw = word.partition("=")
            if name.isidentifier() and not name.startswith("CMAKE_"):
                yield name, _value(raw), extra


def _value(raw: str) -> int | None:
    if not raw:
        return 1
    try:
        return int(raw.rstrip("uUlL"), 0)
    except ValueError:
        return None


def _test(args: list[str]) -> Value:
    """An ``if()`` test's value on a ROCm build and a CUDA build: ``OR`` of ``AND`` of
    (``NOT``...) terms; a parenthesised test is undecided.
    """
    if any(a in ("(", ")") for a in args):
        return (None, None)
    out: Value = (False, False)
    for group in _split(args, "OR"):
        term: Value = (True, True)
        for part in _split(group, "AND"):
            term = _pair(_and, term, _term(part))
        out = _pair(_or, out, term)
    return out


def _split(args: list[str], word: str) -> list[list[str]]:
    groups: list[list[str]] = [[]]
    for arg in args:
        if arg == word:
            groups.append([])
        else:
            groups[-1].append(arg)
    return groups


def _term(words: list[str]) -> Value:
    negate = 0
    while words and words[0] == "NOT":
        negate, words = negate + 1, words[1:]
    value = _atom(words)
    for _ in range(negate):
        value = (_not(value[0]), _not(value[1]))
    return value


def _atom(words: list[str]) -> Value:
    if len(words) == 3 and words[1] in ("STREQUAL", "MATCHES", "EQUAL"):
        target = words[2].upper()
        if target in ("HIP", "ROCM"):
            return (True, False)
        if target == "CUDA":
            return (False, True)
        return (None, None)
    if len(words) == 1:
        name = words[0].removeprefix("${").removesuffix("}")
        if _ROCM_WORD.search(name) and not _CUDA_WORD.search(name):
            return (True, False)
        if _CUDA_WORD.search(name) and not _ROCM_WORD.search(name):
            return (False, True)
    return (None, None)


def _scope(frames: list[list[Value]], extra: Value) -> tuple[bool | None, str]:
    """``(rocm, scope)`` of a define under the open ``if()`` branches: each branch holds when
    its test does and no earlier one of its ``if()`` did; undecided tests are left out when a
    decided one is there.
    """
    branches: list[Value] = [] if extra == (True, True) else [extra]
    for values in frames:
        branch: Value = values[-1]
        for earlier in values[:-1]:
            branch = _pair(_and, branch, (_not(earlier[0]), _not(earlier[1])))
        branches.append(branch)
    decided = [b for b in branches if b != (None, None)]
    rocm: bool | None = True
    cuda: bool | None = True
    for b in decided or branches:
        rocm, cuda = _and(rocm, b[0]), _and(cuda, b[1])
    return scope_of(rocm, cuda)


def _pair(fn: Callable[[bool | None, bool | None], bool | None], a: Value, b: Value) -> Value:
    return (fn(a[0], b[0]), fn(a[1], b[1]))
