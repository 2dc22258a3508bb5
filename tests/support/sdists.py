"""Real CUDA-extension source distributions from PyPI, for the ``pin audit`` tests.

Each sdist is pinned by URL and sha256 (both from PyPI's JSON API,
``https://pypi.org/pypi/NAME/json``, ``releases[VERSION]``, the ``sdist`` entry), downloaded at
test time into ``.wheelhouse/sdists/`` (ignored by git; ``make clean`` removes it), checked and
unpacked there without running anything of it: no ``pip download`` (which would run
``setup.py``), no build. Nothing of these packages is committed.

``python -m tests.support.sdists`` fetches every pinned sdist (``make sdists``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from tests.support.paths import ROOT

SDIST_CACHE = ROOT / ".wheelhouse" / "sdists"
"""Where sdists are downloaded and unpacked: ``<cache>/<file name>`` (the archive) and
``<cache>/<name>-<version>/`` (its unpacked tree)."""

MAX_DOWNLOAD = 16 * 1024 * 1024
"""The largest archive accepted, in bytes (the pinned ones are 25 KB to 2 MB)."""

MAX_UNPACKED = 64 * 1024 * 1024
"""The most bytes an archive may unpack to."""

MAX_MEMBERS = 10_000
"""The most members an archive may hold."""

TIMEOUT_S = (10.0, 60.0)
"""requests' (connect, read) timeouts in seconds."""

_MARKER = ".pin-sdist-sha256"


@dataclass(frozen=True)
class Sdist:
    """One pinned sdist: PyPI ``name`` and ``version``, the file's ``url`` and ``sha256``, its
    ``size`` in bytes and the ``uploaded`` date PyPI gives (``upload_time``, UTC).
    """

    name: str
    version: str
    url: str
    sha256: str
    size: int
    uploaded: str

    def fetch(self, cache_dir: Path = SDIST_CACHE) -> Path:
        """:func:`fetch_sdist` for this entry."""
        return fetch_sdist(self.name, self.version, self.sha256, self.url, cache_dir)


_PYPI = "https://files.pythonhosted.org/packages"

SDISTS: dict[str, Sdist] = {s.name: s for s in (
    # Marlin (inline PTX: cp.async, mma.sync, ldmatrix, lop3), exllama (cuBLAS), CUDAExtension.
    Sdist("auto-gptq", "0.7.1",
          f"{_PYPI}/90/e5/b22697903982284fe284568fb2663a2196694a8eee637f5cf4ccfe435a38/"
          "auto_gptq-0.7.1.tar.gz",
          "5c61ad380e9b4c603757c254765e9083a90a820cd0aff1b5d2c6f7fd96c85e80",
          126148, "2024-03-01"),
    # __shfl_xor_sync with a 32-bit lane mask (0xffffffff), WARP_SIZE 32, CUDAExtension.
    Sdist("exllamav2", "0.0.4",
          f"{_PYPI}/2a/95/ca716fd734582f9abc06bdf51860de9e393ce106d81431d650a60557e45d/"
          "exllamav2-0.0.4.tar.gz",
          "c9eeba99d817c79a6271c3efb0e54f1c5f046a4cab874210fd3745d46b465f56",
          56615, "2023-09-26"),
    # CUB includes, __shfl_xor_sync(uint32_t(-1), ...), CUDAExtension, nvcc -gencode flags.
    Sdist("causal-conv1d", "1.7.0",
          f"{_PYPI}/f4/d1/eba27735f31bd5527d39a3c7f693e6ded7b844cab275db719a15ad37b6cd/"
          "causal_conv1d-1.7.0.tar.gz",
          "3202758494eaa7b597ce1c282dfa188889506bfcb92cad3c407d26736bfcd32b",
          30328, "2026-08-20"),
    # cuRAND (curand.h, curand_init), CMake enable_language(CUDA).
    Sdist("torch-cluster", "1.6.3",
          f"{_PYPI}/54/31/e7f7a28253cd907404eb652607613b35779140b326d15d0636511b7b9438/"
          "torch_cluster-1.6.3.tar.gz",
          "78d5a930a5bbd0d8788df8c6d66addd68d6dd292fe3edb401e3dacba26308152",
          54550, "2023-10-12"),
    # DeepSpeed: kernels under ROCm guards (__HIP_PLATFORM_AMD__, PTX_AVAILABLE), csrc shipped
    # twice (csrc/ and deepspeed/ops/csrc/), cuBLAS, CUTLASS-free inference kernels.
    Sdist("deepspeed", "0.19.8",
          f"{_PYPI}/bc/d8/3162fc810870df1183e686ec70b57028b464a5940b148a90767c727f113c/"
          "deepspeed-0.19.8.tar.gz",
          "9e491abd0827ea5c389dd702e15e11e13d83d904bac4a20d6c2a4cb37207a9af",
          2020482, "2026-10-20"),
    # selective scan: CUB block scans, warp-size constants, USE_ROCM branches.
    Sdist("mamba-ssm", "2.3.2.post1",
          f"{_PYPI}/af/48/aa7bec0efc7453fa0512276c0069c854bf684219050294266534bfef34bb/"
          "mamba_ssm-2.3.2.post1.tar.gz",
          "104cc47e9101e5401a675fa2b784f2952b9b037f3b1dd83b5ac544394e95d028",
          216439, "2026-05-09"),
    # #define FULL_MASK 0xffffffff passed to SHFL_*_SYNC macros that drop it under USE_ROCM.
    Sdist("torch-scatter", "2.1.2",
          f"{_PYPI}/f5/ab/2a44ecac0f891dd0d765fc59ac8d277c6283a31907626560e72685df2ed6/"
          "torch_scatter-2.1.2.tar.gz",
          "69b3aa435f2424ac6a1bfb6ff702da6eb73b33ca0db38fb26989c74159258e47",
          108045, "2023-10-06"),
    # FULL_MASK again, 32-thread rows (thread_idx >> 5) read with absolute-lane shuffles.
    Sdist("torch-sparse", "0.6.18",
          f"{_PYPI}/42/e2/cddf10a8e32a0b214918943e6173672c8ec11000e69c36dad8e6b141cb60/"
          "torch_sparse-0.6.18.tar.gz",
          "2f14c510a6e93f404c6ea357210615b3c15a71731f9dbd86f25434e34fb5a741",
          209982, "2023-10-06"),
    # Many ops kernels, MMCV_WITH_HIP / __NVCC__ guards, warp reductions.
    Sdist("mmcv", "2.2.0",
          f"{_PYPI}/e9/a2/57a733e7e84985a8a0e3101dfb8170fc9db92435c16afad253069ae3f9df/"
          "mmcv-2.2.0.tar.gz",
          "ac479247e808d8802f89eadf04d4118de86bdfe81361ec5aed0cc1bf731c67c9",
          479121, "2024-04-24"),
    # Marlin and AWQ kernels: inline PTX (mma, ldmatrix, cp.async, lop3), 4-bit unpacking.
    Sdist("optimum-quanto", "0.2.7",
          f"{_PYPI}/3e/df/03ae85090b33d81f06b4dd7a43b16cef6ee5f1d36d8fdcce864964895c70/"
          "optimum_quanto-0.2.7.tar.gz",
          "91b5c2dc8a9100297dc7924a93747fb77ab010784b5e1f6d0208976ba054dade",
          361601, "2025-03-06"),
    # A vendored CUTLASS tree (third_party/cutlass/include, about 9 MB) under a small csrc/.
    Sdist("grouped_gemm", "0.3.0",
          f"{_PYPI}/1a/90/d255544a8da444fdfab7287850316d2c7961003586a35d3042787982e66c/"
          "grouped_gemm-0.3.0.tar.gz",
          "f0555da33a975610e9160f52449082c5e699525524581a0e5f990b14b02676a3",
          981113, "2025-05-29"),
    # Plain CUDA kernels with atomics only: mostly nothing to port (a negative control).
    Sdist("torch-spline-conv", "1.2.2",
          f"{_PYPI}/a0/50/5f80c47bf09b561ded0981b088ab0064424843696aa35b3b83afde421e56/"
          "torch_spline_conv-1.2.2.tar.gz",
          "ed45a81da29f774665dbdd4709d7e534cdf16d2e7006dbd06957f35bd09661b2",
          25353, "2023-03-16"),
)}
"""The pinned sdists by PyPI name (URL, sha256, size and upload date read from PyPI's JSON
API on 2026-12-01; the eight after torch-cluster on 2026-12-05 from
``https://pypi.org/pypi/NAME/VERSION/json``)."""


class SdistUnavailable(Exception):
    """The sdist could not be downloaded (no network, HTTP error, timeout)."""


class SdistInvalid(Exception):
    """The sdist was downloaded but is not the pinned one (sha256 differs, too large) or is
    not a safe archive (a member outside the folder, a link, a device file, too many or too
    large members)."""


def fetch_sdist(name: str, version: str, sha256: str, url: str, cache_dir: Path) -> Path:
    """Download ``url`` into ``cache_dir`` unless a copy with ``sha256`` is there, check its
    sha256 and unpack it safely into ``cache_dir/<name>-<version>/``.

    Returns the unpacked tree: the archive's single top-level folder (``auto_gptq-0.7.1``),
    or the whole ``<name>-<version>`` folder when the archive has several top-level entries.
    Idempotent: an archive whose sha256 matches is never downloaded again, and a tree already
    unpacked from it is reused. Raises :class:`SdistUnavailable` when the download fails and
    :class:`SdistInvalid` when what came is not the pinned file or not a safe archive.
    """
    sha256 = sha256.lower()
    cache_dir.mkdir(parents=True, exist_ok=True)
    filename = PurePosixPath(url.split("?", 1)[0]).name
    if not filename or filename in {".", ".."} or "/" in filename or "\\" in filename:
        raise SdistInvalid(f"{url}: no file name in the URL")
    archive = cache_dir / filename
    if not (archive.is_file() and _sha256(archive) == sha256):
        _download(url, sha256, archive)
    tree = cache_dir / f"{name}-{version}"
    marker = tree / _MARKER
    if not (marker.is_file() and marker.read_text(encoding="ascii").strip() == sha256):
        _unpack_fresh(archive, tree, sha256)
    return _top(tree)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _download(url: str, sha256: str, archive: Path) -> None:
    import requests

    h = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(prefix=".download-", dir=archive.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with requests.get(url, stream=True, timeout=TIMEOUT_S) as resp:
                    resp.raise_for_status()
                    for chunk in resp.iter_content(chunk_size=1 << 16):
                        size += len(chunk)
                        if size > MAX_DOWNLOAD:
                            raise SdistInvalid(f"{url}: larger than {MAX_DOWNLOAD} bytes")
                        h.update(chunk)
                        out.write(chunk)
            except requests.RequestException as exc:
                raise SdistUnavailable(f"cannot download {url}: {exc}") from exc
        if h.hexdigest() != sha256:
            raise SdistInvalid(f"{url}: sha256 {h.hexdigest()} is not the pinned {sha256}")
        os.replace(tmp, archive)
    finally:
        tmp.unlink(missing_ok=True)


def _unpack_fresh(archive: Path, tree: Path, sha256: str) -> None:
    """Unpack ``archive`` into a new folder beside ``tree``, then put it in ``tree``'s place."""
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=tree.parent))
    try:
        unpack(archive, staging)
        (staging / _MARKER).write_text(sha256 + "\n", encoding="ascii")
        if tree.exists():
            shutil.rmtree(tree)
        os.replace(staging, tree)
    finally:
        if staging.exists():
            shutil.rmtree(staging)


def _top(tree: Path) -> Path:
    entries = [p for p in tree.iterdir() if p.name != _MARKER]
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return tree


def unpack(archive: Path, dest: Path) -> None:
    """Unpack a ``.tar.gz``/``.tar.bz2``/``.tar`` or ``.zip`` sdist into the folder ``dest``.

    Tar archives go through tarfile's ``data`` filter (no absolute names, nothing outside
    ``dest``, no device files, links only inside); links are refused outright here, as are
    more than :data:`MAX_MEMBERS` members or more than :data:`MAX_UNPACKED` bytes. Zip
    members must be relative, without ``..``. Raises :class:`SdistInvalid`.
    """
    if archive.name.endswith(".zip"):
        _unpack_zip(archive, dest)
        return
    try:
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
            _check_counts(archive, len(members), sum(m.size for m in members if m.isfile()))
            for m in members:
                if not (m.isfile() or m.isdir()):
                    raise SdistInvalid(f"{archive.name}: member {m.name!r} is not a plain file "
                                       "or folder")
                _check_name(archive, m.name)
            tar.extractall(dest, filter="data")
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise SdistInvalid(f"{archive.name}: not a readable tar archive ({exc})") from exc


def _unpack_zip(archive: Path, dest: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            _check_counts(archive, len(infos), sum(i.file_size for i in infos))
            for info in infos:
                _check_name(archive, info.filename)
                if (info.external_attr >> 16) & 0o170000 == 0o120000:
                    raise SdistInvalid(f"{archive.name}: member {info.filename!r} is a link")
            zf.extractall(dest)
    except (zipfile.BadZipFile, OSError) as exc:
        raise SdistInvalid(f"{archive.name}: not a readable zip archive ({exc})") from exc


def _check_counts(archive: Path, members: int, size: int) -> None:
    if members > MAX_MEMBERS:
        raise SdistInvalid(f"{archive.name}: {members} members (more than {MAX_MEMBERS})")
    if size > MAX_UNPACKED:
        raise SdistInvalid(f"{archive.name}: unpacks to {size} bytes (more than "
                           f"{MAX_UNPACKED})")


def _check_name(archive: Path, name: str) -> None:
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or ".." in p.parts or (p.parts and ":" in p.parts[0]):
        raise SdistInvalid(f"{archive.name}: member {name!r} would land outside the folder")


def main() -> int:
    """Fetch every pinned sdist into :data:`SDIST_CACHE`; print one line each."""
    for s in SDISTS.values():
        print(f"{s.name}=={s.version}: {s.fetch()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
