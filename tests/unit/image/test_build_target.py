"""``pin build`` / ``pin rebuild`` with a multi-target lock (lock-version 2): the target named
by ``--target`` is built and its section records the pushed image, the other targets stay
byte for byte; several targets and none named, an unknown target, or ``--target`` with a
single-target lock exit 2 before any engine or registry is touched. No Docker here:
:func:`pinning.image.record.publish` is driven with a stand-in registry and build (the
engine tests in tests/integration build for real).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from pinning.image.record import publish
from pinning.lockfile.io import amend, read_lock, read_lock_at, read_locks, write_lock
from pinning.lockfile.models import Image, Pinned
from pinning.lockfile.wheels import Wheel
from tests.support.cli import pin
from tests.support.multilock_targets import CANDIDATE, CURRENT, write_multi

BASE = "127.0.0.1:9/pin/base@sha256:" + "a" * 64
DIGEST = "sha256:" + "c" * 64


@dataclass
class _Registry:
    """What :func:`publish` asks of a registry: push, then the digest it serves."""

    host: str = "127.0.0.1:5000"
    pushed: list[tuple[str, str]] = field(default_factory=list)

    def push_image(self, repo: str, tag: str, docs: object, *, progress: object) -> str:
        self.pushed.append((repo, tag))
        return DIGEST

    def manifest_digest(self, repo: str, digest: str) -> str:
        return digest


def _built() -> SimpleNamespace:
    wheel = Wheel(name="demo", version="1.0", sha256="0" * 64,
                  filename="demo-1.0-py3-none-any.whl")
    plan = SimpleNamespace(base_ref=BASE, input_hash="sha256:" + "d" * 64, epoch=1_700_000_000,
                           wheels=(wheel,))
    return SimpleNamespace(plan=plan, docs=SimpleNamespace(digest=DIGEST, layers=()))


def test_publish_records_the_image_in_the_targets_section_only(tmp_path: Path) -> None:
    path = write_multi(tmp_path / "pin.lock")
    read = read_lock_at(path, "candidate")
    registry = _Registry()
    ref = publish(registry, "pin/trial", read.lock, _built(), path,  # type: ignore[arg-type]
                  if_unchanged=read.raw, into=read)
    assert ref == f"127.0.0.1:5000/pin/trial@{DIGEST}"
    _, multi, locks = read_locks(path)
    assert multi is not None and list(locks) == ["current", "candidate"]
    assert locks["candidate"].image.digest.value == DIGEST
    image_ref = locks["candidate"].image.ref
    assert image_ref is not None and image_ref.value == ref
    assert [w.name for w in locks["candidate"].wheels or []] == ["demo"]
    assert locks["current"] == read_lock(CURRENT)  # the sibling, unchanged
    assert locks["candidate"].content_hash != read_lock(CANDIDATE).content_hash
    assert multi.content_hash != read.multi.content_hash  # type: ignore[union-attr]


def test_several_targets_unknown_target_and_target_on_a_v1_lock_exit_2(tmp_path: Path
                                                                     ) -> None:
    path = write_multi(tmp_path / "pin.lock")
    before = path.read_bytes()
    for cmd in ("build", "rebuild"):
        none = pin(cmd, str(path), "--registry", "127.0.0.1:9")
        assert none.returncode == 2, none.stderr
        assert "2 targets (current, candidate)" in none.stderr and "--target" in none.stderr
        typo = pin(cmd, str(path), "--target", "candidat")
        assert typo.returncode == 2 and "Did you mean 'candidate'?" in typo.stderr
        v1 = pin(cmd, str(CURRENT), "--target", "current")
        assert v1.returncode == 2 and "single-target lock" in v1.stderr
        assert "Traceback" not in none.stderr + typo.stderr + v1.stderr
    assert path.read_bytes() == before


def test_build_reads_the_targets_lock(tmp_path: Path) -> None:
    """The candidate records an image in a registry that is not there (port 9): build
    --target candidate goes there (exit 8 naming it); current records none (exit 2).
    """
    recorded = "127.0.0.1:9/team/trial@sha256:" + "b" * 64
    candidate = amend(read_lock(CANDIDATE), image=Image(
        base=Pinned(value="127.0.0.1:9/pin/base", origin="user"),
        base_digest=Pinned(value="sha256:" + "a" * 64, origin="user"),
        digest=Pinned(value="sha256:" + "b" * 64, origin="derived"),
        ref=Pinned(value=recorded, origin="derived"), epoch=1_700_000_000))
    path = write_multi(tmp_path / "pin.lock", {"current": read_lock(CURRENT),
                                                "candidate": candidate})
    done = pin("build", str(path), "--target", "candidate", "--wheelhouse", str(tmp_path),
               "--quiet")
    assert done.returncode == 8, done.stderr
    assert "127.0.0.1:9" in done.stderr and "does not know where to push" not in done.stderr
    current = pin("build", str(path), "--target", "current", "--base", BASE)
    assert current.returncode == 2 and "does not know where to push" in current.stderr
    rebuild = pin("rebuild", str(path), "--target", "current")
    assert rebuild.returncode == 8 and "records no image digest" in rebuild.stderr


def test_write_lock_into_keeps_a_v1_lock_v1(tmp_path: Path) -> None:
    path = tmp_path / "one.lock"
    write_lock(read_lock(CURRENT), path)
    read = read_lock_at(path)
    assert read.multi is None and read.target is None
    publish(_Registry(), "pin/trial", read.lock, _built(), path,  # type: ignore[arg-type]
            if_unchanged=read.raw, into=read)
    assert path.read_text().count("lock-version = 1") == 1
    assert read_lock(path).image.digest.value == DIGEST
