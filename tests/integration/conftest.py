"""Real components for integration tests, started by the tests themselves.

- ``dockerd``: Docker Engine on a private socket and data root, ``--bridge=none
  --iptables=false`` (no network for builds); stopped at the end of the session.
- ``registry``: the distribution registry (Debian ``docker-registry``) on 127.0.0.1, free port.
- ``base_image``: the debootstrap base layer (cached by its recipe, see
  ``pinning.image.base``) pushed to that registry by pin's own pusher.

Without the components these tests skip, unless ``PIN_REQUIRE_DOCKER=1`` (CI), which makes a
missing engine a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.components import (
    BaseImage,
    Engine,
    RegistryProc,
    push_base,
    start_dockerd,
    start_registry,
)


def _unavailable(reason: str) -> None:
    if os.environ.get("PIN_REQUIRE_DOCKER") == "1":
        pytest.fail(f"PIN_REQUIRE_DOCKER=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def dockerd() -> Iterator[Engine]:
    try:
        engine = start_dockerd()
    except RuntimeError as exc:
        _unavailable(str(exc))
    try:
        yield engine
    finally:
        engine.stop()


def running_registry(**kw: Any) -> Iterator[RegistryProc]:
    """A registry started with ``start_registry(**kw)`` (password, TLS, token server) for a
    fixture to yield from; stopped afterwards. Unavailable: skip, or fail under
    ``PIN_REQUIRE_DOCKER=1``.
    """
    try:
        reg = start_registry(**kw)
    except RuntimeError as exc:
        _unavailable(str(exc))
    try:
        yield reg
    finally:
        reg.stop()


@pytest.fixture(scope="session")
def registry() -> Iterator[RegistryProc]:
    yield from running_registry()


@pytest.fixture(scope="session")
def base_image(registry: RegistryProc) -> BaseImage:
    if shutil.which("debootstrap") is None or os.geteuid() != 0:
        _unavailable("debootstrap is not installed or not running as root")
    repo, digest, epoch = push_base(registry.url)
    return BaseImage(repo=repo, digest=digest, ref=f"{registry.host}/{repo}@{digest}",
                     epoch=epoch)
