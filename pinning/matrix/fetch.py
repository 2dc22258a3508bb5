"""Fetch the vendor files pin's importers read, for ``pin matrix update``: from GitHub at a
commit (the ref resolved through GitHub's REST API), or from a mirror (``--from URL|DIR``)
laid out as ``raw.githubusercontent.com`` is: ``<base>/<owner>/<repo>/<ref>/<path>``.

Every URL, and every redirect before it is followed, is ``https://`` (plain ``http://`` only
to a loopback host: a test server or a local mirror); a body stops at
:data:`~pinning.matrix.importers.build.MAX_SOURCE_BYTES`. This only fetches bytes: what they
mean is the importers' (:mod:`pinning.matrix.importers.build`). The HTTP client is
``requests``, as elsewhere in pin; the hop check is kept here because the matrix layer may
not import the image or lockfile helpers that do the same for wheels.
"""

from __future__ import annotations

import datetime as dt
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pinning.errors import MatrixError, UsageError
from pinning.matrix.importers.amd_csv import CSV_PATH, PAGE_PATH
from pinning.matrix.importers.build import MAX_SOURCE_BYTES
from pinning.util.net import is_loopback_host

__all__ = ["API", "RAW", "SOURCES", "Fetched", "Source", "check_url", "fetch_source",
           "resolve_ref"]

RAW = "https://raw.githubusercontent.com"
"""Where GitHub serves a repository's files at a ref."""

API = "https://api.github.com"
"""GitHub's REST API (``GET /repos/{owner}/{repo}/commits/{ref}`` gives a ref's commit)."""

TIMEOUT_S = (15.0, 60.0)
"""requests' (connect, read) timeouts in seconds."""

MAX_REDIRECTS = 5
"""The most redirects followed for one file (pin's own bound), each hop checked."""

Log = Callable[[str], None]


@dataclass(frozen=True)
class Source:
    """One vendor file: ``id``, the GitHub ``repo`` and ``path`` it lives at, and whether the
    update can do without it (``required``; an absent optional file is reported, not read).
    """

    id: str
    repo: str
    path: str
    required: bool = True


SOURCES: tuple[Source, ...] = (
    Source("amd-csv", "ROCm/ROCm", CSV_PATH),
    Source("amd-page", "ROCm/ROCm", PAGE_PATH),
    Source("amd-notes", "ROCm/ROCm", "RELEASE.md", required=False),
    Source("pytorch", "pytorch/pytorch", "RELEASE.md"),
)
"""What ``pin matrix update`` reads: AMD's historical CSV, its matrix page (footnote texts)
and release notes (firmware table), and PyTorch's RELEASE.md. NVIDIA's tables
(``nvidia-cuda.toml``) are hand-maintained: pin has no importer for them."""


@dataclass(frozen=True)
class Fetched:
    """One source as read: the ``url``, the ``commit`` it was read at (when known), the
    server's ``etag`` (when sent) and the ``raw`` bytes (``None``: an optional file the
    mirror does not hold).
    """

    source: Source
    url: str
    commit: str | None
    etag: str | None
    raw: bytes | None


def check_url(url: str, *, via: str | None = None) -> None:
    """Raise ``UsageError`` (exit 2) unless ``url`` is ``https://`` with a host and no user
    name, or ``http://`` to a loopback host; ``via``: the URL that redirected to it.
    """
    try:
        parts = urllib.parse.urlsplit(url)
        scheme, host = parts.scheme, parts.hostname or ""
    except ValueError:
        scheme, host, parts = "", "", urllib.parse.urlsplit("")
    if host and "@" not in parts.netloc and (
            scheme == "https" or (scheme == "http" and is_loopback_host(host))):
        return
    where = f"{via} redirects to {url}" if via else url
    raise UsageError(f"{where}: pin fetches vendor data over https only (plain http only "
                     "from a loopback host); nothing was read from it.",
                     hint="Pass an https mirror, or a folder, with --from.")


def _get(url: str, *, accept: str | None = None) -> tuple[bytes | None, str | None]:
    """GET ``url`` (each redirect hop checked), at most ``MAX_SOURCE_BYTES``; returns the body
    and the ETag, or ``(None, None)`` for HTTP 404. Raises ``MatrixError`` (exit 3) for
    another status, a body too large or a connection that fails.
    """
    import requests

    check_url(url)
    current = url
    with requests.Session() as s:
        s.headers["User-Agent"] = "pin (matrix update)"
        if accept:
            s.headers["Accept"] = accept
        try:
            for _ in range(MAX_REDIRECTS + 1):
                resp = s.get(current, stream=True, timeout=TIMEOUT_S, allow_redirects=False)
                target = s.get_redirect_target(resp)
                if target is None:
                    return _body(resp, current)
                resp.close()
                following = urllib.parse.urljoin(current, target)
                check_url(following, via=current)
                current = following
        except requests.RequestException as exc:
            raise MatrixError(f"{current}: cannot fetch ({type(exc).__name__}: {exc}).",
                              hint=_OFFLINE_HINT) from exc
    raise MatrixError(f"{url}: more than {MAX_REDIRECTS} redirects; nothing was read.")


_OFFLINE_HINT = ("Check the network, or pass a mirror with --from URL|DIR; pin keeps using "
                 "the data it holds.")


def _body(resp: object, url: str) -> tuple[bytes | None, str | None]:
    """The body of the final response ``resp`` (a ``requests.Response``), bounded."""
    import requests

    assert isinstance(resp, requests.Response)
    with resp:
        if resp.status_code == 404:
            return None, None
        if resp.status_code != 200:
            raise MatrixError(f"{url}: HTTP {resp.status_code} {resp.reason or ''}".rstrip()
                              + "; nothing was read.", hint=_OFFLINE_HINT)
        out = bytearray()
        for chunk in resp.iter_content(64 * 1024):
            out += chunk
            if len(out) > MAX_SOURCE_BYTES:
                raise MatrixError(f"{url}: more than {MAX_SOURCE_BYTES} bytes (pin's bound "
                                  "for one vendor file); nothing was kept.")
        return bytes(out), resp.headers.get("ETag")


def resolve_ref(repo: str, ref: str, *, log: Log) -> tuple[str, dt.date]:
    """The commit ``ref`` (branch, tag or commit) of GitHub ``repo`` names and its commit date
    (UTC), from GitHub's REST API. Raises ``MatrixError`` (exit 3) when GitHub cannot be
    reached or does not know the ref.
    """
    url = f"{API}/repos/{repo}/commits/{urllib.parse.quote(ref, safe='')}"
    log(f"resolve {repo}@{ref}: {url}")
    raw, _ = _get(url, accept="application/vnd.github+json")
    if raw is None:
        raise MatrixError(f"{url}: GitHub knows no ref {ref!r} in {repo}.",
                          hint="Pass a tag, branch or commit of that repository.")
    from pinning.util.jsonread import load_json

    doc = load_json(raw, MatrixError, label=f"{url}: the GitHub commit answer")
    try:
        sha = str(doc["sha"])
        when = dt.datetime.fromisoformat(str(doc["commit"]["committer"]["date"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise MatrixError(f"{url}: not a GitHub commit answer ({exc}).") from exc
    if not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise MatrixError(f"{url}: {sha!r} is not a commit id.")
    return sha, when.astimezone(dt.UTC).date()


def fetch_source(src: Source, ref: str, *, base: str, commit: str | None, log: Log
                 ) -> Fetched:
    """Read ``src`` at ``ref`` from ``base`` (a URL, or a folder when it is no URL) laid out
    as ``<base>/<repo>/<ref>/<path>``. Raises ``MatrixError`` (exit 3) for a required file
    that is absent or any that cannot be read, ``UsageError`` (exit 2) for a URL pin refuses.
    """
    if "://" not in base:
        path = Path(base) / src.repo / ref / src.path
        log(f"read {src.id}: {path}")
        return Fetched(src, str(path), commit, None, _read_dir(path, src))
    url = f"{base.rstrip('/')}/{src.repo}/{urllib.parse.quote(ref, safe='')}/{src.path}"
    log(f"fetch {src.id}: {url}")
    raw, etag = _get(url)
    if raw is None and src.required:
        raise MatrixError(f"{url}: HTTP 404; {src.id} is required.", hint=_OFFLINE_HINT)
    return Fetched(src, url, commit, etag, raw)


def _read_dir(path: Path, src: Source) -> bytes | None:
    """The bytes of ``path`` in a mirror folder (``None``: an optional file absent)."""
    from pinning.util.files import read_regular_bytes

    if not path.exists() and not src.required:
        return None
    return read_regular_bytes(path, MatrixError, label=str(path), limit=MAX_SOURCE_BYTES,
                              hint="Lay the mirror out as <DIR>/<owner>/<repo>/<ref>/<path>.")
