"""The deterministic parallel gzip of layers: a valid gzip stream (Python's gzip module and
GNU gzip read it), the same bytes whatever the thread count, Python's own gzip bytes for an
input of one block, and the block boundaries (empty input, exact multiples, one byte over)."""

from __future__ import annotations

import gzip
import io
import random
import shutil
import subprocess
import threading
import zlib
from pathlib import Path
from typing import Any

import pytest

from pinning.image.layers import (
    COMPRESSOR,
    GZIP_BLOCK_BYTES,
    GZIP_LEVEL,
    compressor_identity,
    gzip_layer,
    gzip_layers,
)
from pinning.util.digests import sha256_digest

SMALL = 32 * 1024  # the smallest block allowed: many blocks from small inputs


def parallel_gzip(data: bytes, **kw: Any) -> bytes:
    """The gzip bytes :func:`gzip_layer` makes of ``data`` (the blob's bytes alone)."""
    blob = gzip_layer(data, **kw)
    assert blob.data is not None
    return blob.data


def python_gzip(data: bytes, level: int = GZIP_LEVEL) -> bytes:
    """What pin wrote before the parallel compressor (and what one block still gives)."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=level) as gz:
        gz.write(data)
    return buf.getvalue()


def mixed(size: int, seed: int = 7) -> bytes:
    """Half random bytes, half repetitive text: both the stored and the matching paths."""
    rnd = random.Random(seed)
    words = [bytes(rnd.choice(b"abcdefghij") for _ in range(rnd.randint(2, 9)))
             for _ in range(300)]
    want = size - size // 2
    text = b" ".join(rnd.choice(words) for _ in range(want // 2 + 1))[:want]
    return rnd.randbytes(size // 2) + text


@pytest.mark.parametrize("size", [0, 1, SMALL - 1, SMALL, SMALL + 1, 2 * SMALL, 3 * SMALL + 7,
                                  10 * SMALL])
def test_round_trip_at_block_boundaries(size: int) -> None:
    data = mixed(size)
    assert len(data) == size
    out = parallel_gzip(data, block_size=SMALL, jobs=3)
    assert gzip.decompress(out) == data
    # One gzip member: a raw inflate of the body ends exactly before the 8-byte trailer.
    inflate = zlib.decompressobj(-15)
    assert inflate.decompress(out[10:]) == data and inflate.eof
    assert inflate.unused_data == out[-8:]
    assert out[-8:-4] == zlib.crc32(data).to_bytes(4, "little")
    assert out[-4:] == (size & 0xFFFFFFFF).to_bytes(4, "little")


@pytest.mark.parametrize("size", [0, 5, SMALL - 1, SMALL])
def test_one_block_is_pythons_gzip(size: int) -> None:
    data = mixed(size)
    assert parallel_gzip(data, block_size=SMALL) == python_gzip(data)
    assert parallel_gzip(data, level=1, block_size=SMALL) == python_gzip(data, 1)
    assert parallel_gzip(data, level=9, block_size=SMALL) == python_gzip(data, 9)


def test_more_blocks_differ_from_one_stream_but_read_the_same() -> None:
    data = mixed(4 * SMALL)
    split = parallel_gzip(data, block_size=SMALL)
    assert split != python_gzip(data)  # sync flushes between blocks
    assert gzip.decompress(split) == gzip.decompress(python_gzip(data)) == data


def test_same_bytes_whatever_the_thread_count() -> None:
    data = mixed(2 * GZIP_BLOCK_BYTES + 12345)
    outs = {parallel_gzip(data, jobs=jobs) for jobs in (1, 2, 3, 8)}
    assert len(outs) == 1
    assert gzip.decompress(outs.pop()) == data


def test_the_dictionary_keeps_the_ratio() -> None:
    """Each block primed with the previous block's end compresses repeated text across the
    boundary: the output is far smaller than blocks compressed on their own would be."""
    unit = random.Random(3).randbytes(SMALL // 2)
    data = unit * 20  # every block repeats what the block before it ended with
    out = parallel_gzip(data, block_size=SMALL)
    alone = sum(len(zlib.compress(data[i:i + SMALL])) for i in range(0, len(data), SMALL))
    assert len(out) < alone // 3


def test_gnu_gzip_accepts_the_stream(tmp_path: Path) -> None:
    exe = shutil.which("gzip")
    if exe is None:
        pytest.fail("GNU gzip is not installed")
    data = mixed(5 * SMALL + 3)
    path = tmp_path / "layer.tar.gz"
    path.write_bytes(parallel_gzip(data, block_size=SMALL))
    subprocess.run([exe, "-t", str(path)], check=True, timeout=60)
    done = subprocess.run([exe, "-dc", str(path)], check=True, capture_output=True, timeout=60)
    assert done.stdout == data


def test_header_has_no_time_name_and_a_fixed_os() -> None:
    out = parallel_gzip(mixed(3 * SMALL), block_size=SMALL)
    assert out[:4] == b"\x1f\x8b\x08\x00"  # deflate, no FNAME/FEXTRA/FCOMMENT/FHCRC
    assert out[4:8] == b"\x00\x00\x00\x00" and out[9] == 255


def test_layers_compress_together_and_report_bytes() -> None:
    class Task:
        def __init__(self, label: str, total: int | None) -> None:
            self.label, self.total, self.seen, self.finished = label, total, 0, 0

        def advance(self, n: int) -> None:
            with lock:
                self.seen += n

        def done(self, note: str = "") -> None:
            self.finished += 1

    lock = threading.Lock()
    tasks: list[Task] = []

    class Progress:
        def task(self, label: str, total: int | None = None) -> Task:
            tasks.append(Task(label, total))
            return tasks[-1]

    tars = [mixed(3 * SMALL, seed=1), b"", mixed(SMALL + 1, seed=2)]
    blobs = gzip_layers(tars, block_size=SMALL, jobs=2, progress=Progress())
    for tar, blob in zip(tars, blobs, strict=True):
        assert blob.data is not None and gzip.decompress(blob.data) == tar
        assert blob.diff_id == sha256_digest(tar) and blob.digest == sha256_digest(blob.data)
        assert blob == gzip_layer(tar, block_size=SMALL, jobs=1)
    assert [(t.label, t.total, t.seen) for t in tasks] == [
        ("compress layer 1/3", len(tars[0]), len(tars[0])), ("compress layer 2/3", 0, 0),
        ("compress layer 3/3", len(tars[2]), len(tars[2]))]
    assert all(t.finished >= 1 for t in tasks)


def test_bad_level_or_block_is_a_caller_bug() -> None:
    with pytest.raises(ValueError, match="level"):
        parallel_gzip(b"x", level=0)
    with pytest.raises(ValueError, match="block size"):
        parallel_gzip(b"x", block_size=SMALL - 1)


def test_the_identity_names_level_block_and_zlib() -> None:
    assert f"level={GZIP_LEVEL}" in COMPRESSOR and f"block={GZIP_BLOCK_BYTES}" in COMPRESSOR
    assert compressor_identity() == f"{COMPRESSOR} zlib={zlib.ZLIB_RUNTIME_VERSION}"
