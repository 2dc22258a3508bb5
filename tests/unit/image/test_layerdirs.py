"""The overlay2 layer reader (issue 33 §1): a ``diff`` directory becomes the tar ``docker
save`` writes for it, and only an engine whose store is readable here is read directly
(tests/integration/test_build_layerdirs.py compares it with a real engine's ``docker save``).
"""

from __future__ import annotations

import io
import os
import socket
import tarfile
from pathlib import Path
from typing import Any

import pytest

from pinning.image.layerdirs import dir_layer_tar, layer_dirs, local_layers, walk_order
from pinning.image.layers import squash_layers
from tests.support.progress import Recorder


def _members(tar: bytes) -> list[tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        return t.getmembers()


def test_walk_order_is_depth_first_by_bytes(tmp_path: Path) -> None:
    for rel in ("b/z", "a.txt", "a/y", "B", "a/x/1"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)
    assert walk_order(tmp_path) == ["B", "a", "a/x", "a/x/1", "a/y", "a.txt", "b", "b/z"]


def test_dir_layer_tar_links_modes_and_sockets(tmp_path: Path) -> None:
    (tmp_path / "opt").mkdir()
    (tmp_path / "opt/a").write_bytes(b"one\n")
    os.chmod(tmp_path / "opt/a", 0o4755)
    os.link(tmp_path / "opt/a", tmp_path / "opt/b")
    os.symlink("a", tmp_path / "opt/s")
    os.mkfifo(tmp_path / "opt/f")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "opt/sock"))
        members = {m.name: m for m in _members(dir_layer_tar(tmp_path))}
    finally:
        sock.close()
    assert list(members) == ["opt", "opt/a", "opt/b", "opt/f", "opt/s"]  # no socket, no root
    assert members["opt/a"].isreg() and members["opt/a"].mode & 0o7777 == 0o4755
    assert members["opt/b"].islnk() and members["opt/b"].linkname == "opt/a"
    assert members["opt/s"].issym() and members["opt/s"].linkname == "a"
    assert members["opt/f"].isfifo()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="overlay whiteouts (a 0:0 character device, trusted.* attributes) "
                           "need root")
def test_dir_layer_tar_writes_overlay_whiteouts_as_docker_does(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    os.mknod(tmp_path / "etc/issue", 0o600 | 0o020000, os.makedev(0, 0))
    (tmp_path / "doc").mkdir(mode=0o750)
    os.chmod(tmp_path / "doc", 0o750)
    try:
        os.setxattr(tmp_path / "doc", "trusted.overlay.opaque", b"y")
    except OSError as exc:
        pytest.skip(f"this file system keeps no trusted.* attributes: {exc}")
    members = {m.name: m for m in _members(dir_layer_tar(tmp_path))}
    assert list(members) == ["doc", "doc/.wh..wh..opq", "etc", "etc/.wh.issue"]
    assert members["etc/.wh.issue"].isreg() and members["etc/.wh.issue"].mode == 0o600
    assert members["doc/.wh..wh..opq"].isreg() and members["doc/.wh..wh..opq"].mode == 0o750
    # The squash honours and keeps them.
    squashed = squash_layers([io.BytesIO(dir_layer_tar(tmp_path))], epoch=1)
    assert {m.name for m in _members(squashed)} >= {"etc/.wh.issue", "doc/.wh..wh..opq"}


class _Images:
    def __init__(self, attrs: dict[str, Any]) -> None:
        self.attrs = attrs

    def get(self, image_id: str) -> _Images:
        return self


class _Client:
    """The two engine calls :func:`layer_dirs` makes, answering recorded shapes."""

    def __init__(self, info: dict[str, Any], attrs: dict[str, Any]) -> None:
        self._info = info
        self.images = _Images(attrs)

    def info(self) -> dict[str, Any]:
        return self._info


OVERLAY_INFO = {"Driver": "overlay2", "DriverStatus": [
    ["Backing Filesystem", "extfs"], ["Supports d_type", "true"],
    ["Native Overlay Diff", "true"], ["userxattr", "false"]]}


def _image(tmp_path: Path, count: int) -> dict[str, Any]:
    dirs = []
    for i in range(count):
        d = tmp_path / f"l{i}" / "diff"
        (d / f"f{i}").parent.mkdir(parents=True)
        (d / f"f{i}").write_text(str(i))
        dirs.append(str(d))
    return {"RootFS": {"Layers": [f"sha256:{i:064x}" for i in range(count)]},
            "GraphDriver": {"Name": "overlay2", "Data": {
                "UpperDir": dirs[-1], "LowerDir": ":".join(reversed(dirs[:-1]))}}}


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_local_layers_reads_only_those_above_the_base(tmp_path: Path) -> None:
    client = _Client(OVERLAY_INFO, _image(tmp_path, 3))
    seen = Recorder()
    layers = local_layers(client, "sha256:" + "ab" * 32, 1, progress=seen)
    assert layers is not None and layers[0] is None
    assert [[m.name for m in _members(t or b"")] for t in layers[1:]] == [["f1"], ["f2"]]
    assert seen.labels("export ")[0]["seen"] == sum(len(t or b"") for t in layers)


@pytest.mark.parametrize("info", [
    {"Driver": "vfs", "DriverStatus": []},
    {"Driver": "overlay2", "DriverStatus": [["Native Overlay Diff", "false"]]},
    {"Driver": "overlay2", "DriverStatus": [["Native Overlay Diff", "true"],
                                            ["userxattr", "true"]]},
])
def test_other_stores_fall_back_to_save(tmp_path: Path, info: dict[str, Any]) -> None:
    assert layer_dirs(_Client(info, _image(tmp_path, 2)), "x") is None


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_a_layer_count_or_directory_that_does_not_match_falls_back(tmp_path: Path) -> None:
    attrs = _image(tmp_path, 2)
    attrs["RootFS"]["Layers"].append("sha256:" + "0" * 64)
    assert layer_dirs(_Client(OVERLAY_INFO, attrs), "x") is None
    attrs = _image(tmp_path / "gone", 2)
    attrs["GraphDriver"]["Data"]["LowerDir"] = str(tmp_path / "missing")
    assert layer_dirs(_Client(OVERLAY_INFO, attrs), "x") is None
    assert local_layers(_Client(OVERLAY_INFO, attrs), "x", 1) is None
