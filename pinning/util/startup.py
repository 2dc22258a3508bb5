"""The garbage collector paused while a command starts.

Starting a command builds tens of thousands of objects that live until it exits (modules,
classes, pydantic validators, the lock and matrix) and are never garbage; Python's cyclic
collector would scan them again and again as they are made (about a tenth of a command's
start). :func:`loading` pauses it over that phase and then freezes what was made
(:func:`gc.freeze`), so later collections, while the command does its work, skip it too.
The standard library's :mod:`gc` is all it takes; no library offers more here.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["loading"]


@contextmanager
def loading() -> Iterator[None]:
    """Run the block with the cyclic garbage collector paused, then move every object alive
    (what the block loaded) to the permanent generation and resume collecting, unless the
    collector was off already. Nothing is freed or lost: only cycles made in the block are
    left to the process's exit. Raises nothing of its own.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_on:
            gc.enable()
