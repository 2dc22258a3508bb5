"""Layer normalisation: the same files give the same bytes whatever their times, owners and
order; volatile paths are dropped."""

from __future__ import annotations

import gzip
import io
import tarfile

from hypothesis import given, settings
from hypothesis import strategies as st

from pinning.image.layers import gzip_layer, is_volatile, normalize_layer

EPOCH = 1_700_000_000


def make_tar(files: dict[str, bytes], *, mtime: int, uid: int, reverse: bool = False) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        names = sorted(files, reverse=reverse)
        for name in names:
            info = tarfile.TarInfo("./" + name)
            info.size = len(files[name])
            info.mtime, info.uid, info.gid = mtime, uid, uid
            info.uname = info.gname = "builder"
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(files[name]))
        link = tarfile.TarInfo("./usr/bin/python")
        link.type, link.linkname, link.mtime = tarfile.SYMTYPE, "python3", mtime
        tar.addfile(link)
    return buf.getvalue()


FILES = {
    "usr/lib/python3/dist-packages/x/__init__.py": b"x = 1\n",
    "usr/lib/python3/dist-packages/x/__pycache__/__init__.cpython-311.pyc": b"\x00\x01",
    "var/log/dpkg.log": b"2026-11-29 install x\n",
    "var/cache/apt/pkgcache.bin": b"cache",
    "root/.cache/pip/http/abc": b"wheel",
    "etc/hostname": b"trial\n",
}


def test_same_files_same_bytes_whatever_times_owners_order() -> None:
    a = normalize_layer(io.BytesIO(make_tar(FILES, mtime=1, uid=1000)), epoch=EPOCH)
    b = normalize_layer(io.BytesIO(make_tar(FILES, mtime=99999, uid=0, reverse=True)),
                        epoch=EPOCH)
    assert a == b
    assert gzip_layer(a) == gzip_layer(b)
    with tarfile.open(fileobj=io.BytesIO(a)) as t:
        members = t.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names)
    assert names == ["etc/hostname", "usr/bin/python", "usr/lib/python3/dist-packages/x/__init__.py"]
    assert {m.mtime for m in members} == {EPOCH}
    assert {(m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, "", "")}


def test_different_content_different_digest() -> None:
    a = gzip_layer(normalize_layer(io.BytesIO(make_tar(FILES, mtime=1, uid=0)), epoch=EPOCH))
    changed = dict(FILES, **{"etc/hostname": b"other\n"})
    b = gzip_layer(normalize_layer(io.BytesIO(make_tar(changed, mtime=1, uid=0)), epoch=EPOCH))
    assert a.digest != b.digest and a.diff_id != b.diff_id


def test_gzip_header_has_no_time_or_name() -> None:
    blob = gzip_layer(b"abc")
    assert blob.data is not None
    assert blob.data[4:8] == b"\x00\x00\x00\x00"  # MTIME
    assert blob.data[3] & 0x08 == 0  # FNAME flag unset
    assert gzip.decompress(blob.data) == b"abc"
    assert blob.digest.startswith("sha256:") and blob.size == len(blob.data)


def test_volatile_patterns() -> None:
    assert is_volatile("./var/log/apt/history.log")
    assert is_volatile("usr/lib/python3.11/__pycache__")
    assert is_volatile("root/.cache")
    assert not is_volatile("var/lib/dpkg/status")
    assert not is_volatile("usr/lib/python3/dist-packages/x/__init__.py")


@settings(max_examples=30, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z]{1,8}(/[a-z]{1,8}){0,2}", fullmatch=True),
                       st.binary(max_size=64), min_size=1, max_size=8),
       st.integers(0, 2**31), st.integers(0, 65535))
def test_normalisation_is_idempotent_and_order_free(files: dict[str, bytes], mtime: int,
                                                    uid: int) -> None:
    once = normalize_layer(io.BytesIO(make_tar(files, mtime=mtime, uid=uid)), epoch=EPOCH)
    again = normalize_layer(io.BytesIO(once), epoch=EPOCH)
    assert once == again
    rev = normalize_layer(io.BytesIO(make_tar(files, mtime=0, uid=0, reverse=True)), epoch=EPOCH)
    assert once == rev


def _layer(files: dict[str, bytes | None]) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return buf


def test_squash_applies_whiteouts_and_drops_volatile() -> None:
    from pinning.image.layers import squash_layers

    one = _layer({"tmp/wheels/a.whl": b"w", "usr/local/lib/x.py": b"1", "opt/d": None,
                  "opt/d/old": b"o"})
    two = _layer({"tmp/.wh.wheels": b"", "usr/local/lib/x.py": b"2", "opt/d/.wh..wh..opq": b"",
                  "opt/d/new": b"n", "var/log/pip.log": b"l"})
    out = squash_layers([one, two], epoch=EPOCH)
    with tarfile.open(fileobj=io.BytesIO(out)) as t:
        # extractfile gives a file for every regular member (m.isreg()), never None there.
        names = {m.name: t.extractfile(m).read() if m.isreg() else None for m in t}  # type: ignore[union-attr]
    # The opaque marker stays: it also hides what the base had in opt/d.
    assert names == {"opt/d": None, "opt/d/.wh..wh..opq": b"", "opt/d/new": b"n",
                     "usr/local/lib/x.py": b"2"}


def test_squash_keeps_deletions_of_base_files_and_recreations() -> None:
    from pinning.image.layers import squash_layers

    one = _layer({"etc/.wh.motd": b"", "etc/.wh.issue": b""})
    two = _layer({"etc/issue": b"new"})
    out = squash_layers([one, two], epoch=EPOCH)
    with tarfile.open(fileobj=io.BytesIO(out)) as t:
        names = sorted(m.name for m in t)
    assert names == ["etc/.wh.motd", "etc/issue"]


def test_hardlinks_are_written_after_their_target() -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        link = tarfile.TarInfo("a-c/g")
        link.type, link.linkname = tarfile.LNKTYPE, "a/b/f"
        tar.addfile(link)
        data = tarfile.TarInfo("a/b/f")
        data.size = 3
        tar.addfile(data, io.BytesIO(b"abc"))
        dropped = tarfile.TarInfo("x/link-to-log")
        dropped.type, dropped.linkname = tarfile.LNKTYPE, "var/log/y"
        tar.addfile(dropped)
    out = normalize_layer(io.BytesIO(buf.getvalue()), epoch=EPOCH)
    with tarfile.open(fileobj=io.BytesIO(out)) as t:
        members = {m.name: m for m in t}
        order = [m.name for m in t.getmembers()]
        assert order == ["a/b/f", "a-c/g"]  # components sort: "a" before "a-c"
        assert members["a-c/g"].islnk() and members["a-c/g"].linkname == "a/b/f"
    assert "x/link-to-log" not in members  # its target is a dropped volatile path
