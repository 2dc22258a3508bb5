"""The fetch step of ``pin build``: every wheel the lock records, downloaded by its URL and
checked against its sha256, into a wheel cache the build then reads with the network off.

A wheel already in the cache with the locked sha256 is reused. A download is hashed while it
streams into a temporary file beside its final name and renamed into place only when the
sha256 (and the size, when the lock records one) matches: the cache never holds a partial or
wrong file under a wheel's name, whatever fails. The bytes hashed are those the server sent
(``Accept-Encoding: identity`` asked, and no ``Content-Encoding`` undone), as pip does:
``HEADERS = {"Accept-Encoding": "identity"}``, and ``decode_content=False`` because "If we
decompress inside of urllib3 then we cannot verify the checksum"
(pypa/pip@0d5c09bdf4eef190229afca9819bf25ece2b371e:src/pip/_internal/network/utils.py, date
not recorded). A download stops past the locked size, or past :data:`MAX_WHEEL_BYTES` when
the lock records none. URLs are ``https://``, or ``http://`` from a loopback host (a test
index, a local mirror), and so is every redirect: each hop is checked before it is followed.
TLS is checked against ``PIN_INDEX_CA`` (a PEM bundle, for a team's own index) or the
system's CAs as requests finds them.
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
from pinning.lockfile.models import Lockfile
from pinning.lockfile.wheels import Wheel
from pinning.util.files import sha256_file
from pinning.util.net import is_loopback_host
from pinning.util.progress import NULL_PROGRESS, Progress
from pinning.util.text import redact

if TYPE_CHECKING:
    import requests

__all__ = ["CHUNK", "MAX_REDIRECTS", "MAX_WHEEL_BYTES", "TIMEOUT_S", "default_wheel_cache",
           "fetch_wheels"]

CHUNK = 1024 * 1024
"""Bytes read from the network at a time."""

TIMEOUT_S = (15.0, 120.0)
"""requests' (connect, read) timeouts in seconds: how long to wait for the connection and
for each piece of the body, not for the whole file."""

MAX_WHEEL_BYTES = 32 * 1024**3
"""The most bytes pin downloads for one wheel whose size the lock does not record (32 GiB).
A safety bound of pin's own choosing, not a fact about any wheel: set far above any wheel
pin expects, and only there so that a server that never stops sending cannot fill the
disk. A size the lock records is the bound instead."""

MAX_REDIRECTS = 10
"""The most redirects followed for one wheel, each hop checked (pin's own bound; requests
follows up to 30, ``DEFAULT_REDIRECT_LIMIT`` in psf/requests ``src/requests/models.py``,
requests 2.34.2; date not recorded)."""

_REDIRECTS = frozenset({301, 302, 303, 307, 308})


def default_wheel_cache() -> Path:
    """Where fetched wheels are kept: ``$PIN_CACHE_DIR/wheels``, else
    ``~/.cache/pin/wheels``.
    """
    root = os.environ.get("PIN_CACHE_DIR") or str(Path.home() / ".cache" / "pin")
    return Path(root) / "wheels"


def _shown(url: str) -> str:
    """``url`` as a message quotes it: credentials as ``***@``, escaped, at most 300 chars."""
    from pinning.util.text import printable

    return printable(redact(url, mask="***")[:300], newlines=False)


def _check_url(url: str, *, via: str | None = None, name: str | None = None) -> None:
    """Raise :class:`BuildError` unless ``url`` is https, or http to a loopback host;
    ``via``: the URL that redirected to it and ``name``: the wheel's file name, both named
    in the message.
    """
    try:
        parts = urllib.parse.urlsplit(url)
        scheme, host = parts.scheme, parts.hostname or ""
    except ValueError:
        scheme, host = "", ""
    if not (scheme == "https" or (scheme == "http" and is_loopback_host(host))):
        where = f"{_shown(via)} redirects to {_shown(url)}" if via else f"URL {_shown(url)}"
        raise BuildError(f"Wheel {name + ': ' if name else ''}{where}: pin fetches over "
                         "https only (plain http from a loopback host); nothing was "
                         "downloaded from it.",
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
            # The bytes as stored, as pip asks for them (pip's network/utils.py HEADERS,
            # cited in the module docstring).
            s.headers["Accept-Encoding"] = "identity"
            self.local.session = s
        return s

    def open(self, url: str, name: str) -> requests.Response:
        """GET ``url`` streamed, following at most :data:`MAX_REDIRECTS` redirects, each
        hop checked by :func:`_check_url` before it is requested. Returns the final
        response, status 200; raises :class:`BuildError` for another status or a refused
        hop (``requests`` exceptions pass through).
        """
        session = self.session()
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            resp = session.get(current, stream=True, timeout=TIMEOUT_S, verify=self.verify,
                               allow_redirects=False)
            target = session.get_redirect_target(resp) if resp.status_code in _REDIRECTS \
                else None
            if target is None:
                if resp.status_code != 200:
                    resp.close()
                    raise BuildError(f"Wheel {name}: {_shown(current)} answered HTTP "
                                     f"{resp.status_code} {resp.reason or ''}".rstrip() + ".",
                                     hint="Check that the index still serves it, or pass "
                                          "--wheelhouse DIR holding the locked wheels.")
                return resp
            resp.close()
            following = urllib.parse.urljoin(current, target)
            _check_url(following, via=current, name=name)
            current = following
        raise BuildError(f"Wheel {name}: {_shown(url)} redirected more than {MAX_REDIRECTS} "
                         "times; nothing was downloaded.",
                         hint="Check the URL the lock records, or pass --wheelhouse DIR "
                              "holding the locked wheels.")

    def fetch(self, wheel: Wheel) -> None:
        """Download ``wheel`` to ``dest / filename``, hash-checked over the bytes as sent;
        raise :class:`BuildError` (see :func:`fetch_wheels`).
        """
        import requests
        import urllib3

        url = str(wheel.url)
        _check_url(url)
        limit = wheel.size if wheel.size is not None else MAX_WHEEL_BYTES
        what = (f"the {wheel.size} bytes the lock records" if wheel.size is not None else
                f"{MAX_WHEEL_BYTES} bytes (MAX_WHEEL_BYTES, pin's bound for a wheel whose "
                "size the lock does not record)")
        try:
            fd, tmp = tempfile.mkstemp(dir=self.dest, prefix=f".{wheel.filename}.",
                                       suffix=".part")
        except OSError as exc:
            raise BuildError(f"Wheel {wheel.filename}: cannot write into {self.dest} "
                             f"({exc.strerror or exc}).") from exc
        task = self.progress.task(f"fetch {wheel.filename}", wheel.size)
        try:
            digest, size = hashlib.sha256(), 0
            with os.fdopen(fd, "wb") as out, self.open(url, wheel.filename) as resp:
                declared = resp.headers.get("Content-Length", "")
                if declared.isdigit() and int(declared) > limit:
                    raise BuildError(f"Wheel {wheel.filename}: {_shown(resp.url)} announces "
                                     f"{int(declared)} bytes, more than {what}; nothing "
                                     "was kept.")
                for chunk in resp.raw.stream(CHUNK, decode_content=False):
                    size += len(chunk)
                    if size > limit:
                        raise BuildError(f"Wheel {wheel.filename}: {_shown(resp.url)} sent "
                                         f"more than {what}; nothing was kept.")
                    digest.update(chunk)
                    out.write(chunk)
                    task.advance(len(chunk))
            got = digest.hexdigest()
            if got != wheel.sha256:
                raise BuildError(f"Wheel {wheel.filename}: {_shown(url)} has sha256 {got}, "
                                 f"the lock expects {wheel.sha256}; nothing was kept.",
                                 hint="The index serves other bytes than were locked: lock "
                                      "again (pin lock packages) only if you trust the change.")
            os.replace(tmp, self.dest / wheel.filename)
        except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
            raise BuildError(f"Wheel {wheel.filename}: cannot download {_shown(url)} "
                             f"({type(exc).__name__}: "
                             f"{_shown(str(exc))}).",
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
    not https (or loopback http), or a redirect to one (refused before it is followed); an
    HTTP error, a network failure, more than :data:`MAX_REDIRECTS` redirects; more bytes
    than the locked size (or :data:`MAX_WHEEL_BYTES` without one); or bytes whose sha256
    does not match (naming the URL, the expected and the received sha256). The sha256 is of
    the bytes as sent, ``Content-Encoding`` not undone, as pip hashes them. A failed
    download leaves no file behind.
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
