"""The fetch step of ``pin build``: every wheel the lock records, downloaded by its URL and
checked against its sha256, into a wheel cache the build then reads with the network off.

A wheel already in the cache with the locked sha256 is reused. A download is hashed while it
streams into a temporary file beside its final name and renamed into place only when the
sha256 (and the size, when the lock records one) matches: the cache never holds a partial or
wrong file under a wheel's name, whatever fails. URLs are ``https://``, or ``http://`` from a
loopback host (a test index, a local mirror); TLS is checked against ``PIN_INDEX_CA`` (a PEM
bundle, for a team's own index) or the system's CAs as requests finds them.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import threading
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from pinning.errors import BuildError
from pinning.lockfile.models import Lockfile, Wheel, is_loopback_host
from pinning.util.files import sha256_file
from pinning.util.progress import NULL_PROGRESS, Progress

if TYPE_CHECKING:
    import requests

__all__ = ["CHUNK", "TIMEOUT_S", "default_wheel_cache", "fetch_wheels"]

CHUNK = 1024 * 1024
"""Bytes read from the network at a time."""

TIMEOUT_S = (15.0, 120.0)
"""requests' (connect, read) timeouts in seconds: how long to wait for the connection and
for each piece of the body, not for the whole file."""


def default_wheel_cache() -> Path:
    """Where fetched wheels are kept: ``$PIN_CACHE_DIR/wheels``, else
    ``~/.cache/pin/wheels``.
    """
    root = os.environ.get("PIN_CACHE_DIR") or str(Path.home() / ".cache" / "pin")
    return Path(root) / "wheels"


def _check_url(url: str) -> None:
    """Raise :class:`BuildError` unless ``url`` is https, or http to a loopback host."""
    try:
        parts = urllib.parse.urlsplit(url)
        scheme, host = parts.scheme, parts.hostname or ""
    except ValueError:
        scheme, host = "", ""
    if not (scheme == "https" or (scheme == "http" and is_loopback_host(host))):
        raise BuildError(f"Wheel URL {url}: pin fetches over https only (plain http from a "
                         "loopback host).",
                         hint="Lock the packages from an https index (pin lock packages "
                              "--index URL).")


def _cached(path: Path, wheel: Wheel) -> bool:
    """True when ``path`` is a regular file whose sha256 is the wheel's."""
    if not path.is_file():
        return False
    try:
        return sha256_file(path, BuildError, label=str(path)) == wheel.sha256
    except BuildError:
        return False


class _Fetcher:
    """Downloads into ``dest`` with one requests session per thread."""

    def __init__(self, dest: Path, progress: Progress) -> None:
        self.dest = dest
        self.progress = progress
        self.local = threading.local()
        self.verify: str | bool = os.environ.get("PIN_INDEX_CA") or True

    def session(self) -> requests.Session:
        import requests

        s: requests.Session | None = getattr(self.local, "session", None)
        if s is None:
            s = requests.Session()
            s.headers["User-Agent"] = "pin (wheel fetch)"
            self.local.session = s
        return s

    def fetch(self, wheel: Wheel) -> None:
        """Download ``wheel`` to ``dest / filename``, hash-checked; raise :class:`BuildError`."""
        import requests

        url = str(wheel.url)
        _check_url(url)
        try:
            fd, tmp = tempfile.mkstemp(dir=self.dest, prefix=f".{wheel.filename}.",
                                       suffix=".part")
        except OSError as exc:
            raise BuildError(f"Wheel {wheel.filename}: cannot write into {self.dest} "
                             f"({exc.strerror or exc}).") from exc
        task = self.progress.task(f"fetch {wheel.filename}", wheel.size)
        try:
            digest, size = hashlib.sha256(), 0
            with os.fdopen(fd, "wb") as out, self.session().get(
                    url, stream=True, timeout=TIMEOUT_S, verify=self.verify) as resp:
                _check_url(resp.url)  # a redirect may not leave https
                if resp.status_code != 200:
                    raise BuildError(f"Wheel {wheel.filename}: {url} answered HTTP "
                                     f"{resp.status_code} {resp.reason or ''}".rstrip() + ".",
                                     hint="Check that the index still serves it, or pass "
                                          "--wheelhouse DIR holding the locked wheels.")
                for chunk in resp.iter_content(CHUNK):
                    size += len(chunk)
                    if wheel.size is not None and size > wheel.size:
                        raise BuildError(f"Wheel {wheel.filename}: {url} sent more than the "
                                         f"{wheel.size} bytes the lock records.")
                    digest.update(chunk)
                    out.write(chunk)
                    task.advance(len(chunk))
            got = digest.hexdigest()
            if got != wheel.sha256:
                raise BuildError(f"Wheel {wheel.filename}: {url} has sha256 {got}, the lock "
                                 f"expects {wheel.sha256}; nothing was kept.",
                                 hint="The index serves other bytes than were locked: lock "
                                      "again (pin lock packages) only if you trust the change.")
            os.replace(tmp, self.dest / wheel.filename)
        except requests.RequestException as exc:
            raise BuildError(f"Wheel {wheel.filename}: cannot download {url} "
                             f"({type(exc).__name__}: {exc}).",
                             hint="Check the network, the proxy settings and PIN_INDEX_CA, or "
                                  "pass --wheelhouse DIR holding the locked wheels.") from exc
        except OSError as exc:
            raise BuildError(f"Wheel {wheel.filename}: cannot write into {self.dest} "
                             f"({exc.strerror or exc}).") from exc
        finally:
            task.done()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def fetch_wheels(lock: Lockfile, dest: Path, *, progress: Progress = NULL_PROGRESS,
                 jobs: int = 4) -> Path:
    """Make ``dest`` (a wheel cache, see :func:`default_wheel_cache`) hold every wheel of
    ``lock.wheels`` under its file name with its locked sha256, downloading those missing by
    their URL, ``jobs`` at a time, each reported to ``progress`` in bytes. Returns ``dest``.

    Raises :class:`BuildError` (exit 8) when the lock records no wheels; when a wheel is not in
    ``dest`` and has no URL (a wheel house lock: pass ``--wheelhouse``); for a URL that is
    not https (or loopback http), an HTTP error, a network failure, or bytes whose sha256
    does not match (naming the URL, the expected and the received sha256). A failed download
    leaves no file behind.
    """
    if not lock.wheels:
        raise BuildError("The lock records no wheels to fetch.",
                         hint="Run `pin lock packages LOCK` to resolve and record them, or "
                              "pass --wheelhouse DIR.")
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BuildError(f"Wheel cache {dest}: cannot be created ({exc.strerror or exc}).",
                         hint="Set PIN_CACHE_DIR to a writable folder.") from exc
    wanted = {w.filename: w for w in lock.wheels}
    missing = [w for w in wanted.values() if not _cached(dest / w.filename, w)]
    unfetchable = [w.filename for w in missing if w.url is None]
    if unfetchable:
        raise BuildError(f"{len(unfetchable)} wheel(s) of the lock are not in {dest} and the "
                         f"lock records no URL for them: {', '.join(unfetchable[:5])}"
                         + (" ..." if len(unfetchable) > 5 else "") + ".",
                         hint="Pass --wheelhouse DIR holding them, or run `pin lock packages "
                              "LOCK` to record where they come from.")
    if not missing:
        return dest
    fetcher = _Fetcher(dest, progress)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(fetcher.fetch, w) for w in missing]
        try:
            for f in futures:
                f.result()
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return dest
