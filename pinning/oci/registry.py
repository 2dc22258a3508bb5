"""Push and fetch exact bytes with an OCI registry over the distribution HTTP API (requests):
:class:`Registry` (images, manifests, referrers) and :func:`fetch_docs`.

pin keeps its own client instead of a registry library because it must send and read back
the exact bytes it hashed and signed (manifests never re-serialised, digests checked both
ways), which the libraries we looked at do not promise.

The client is built in layers, one module each: :mod:`pinning.oci.address` (where: the
address grammar, ``http://`` only for a loopback host, Docker Hub served by
``registry-1.docker.io``; trust: ``ca_cert``, ``PIN_REGISTRY_CA``, Docker's ``certs.d``),
:mod:`pinning.oci.connection` (per-thread sessions, the scheme probe, credentials held),
:mod:`pinning.oci.transport` (requests, the ``WWW-Authenticate`` sign-in: Basic or the
bearer-token flow of distribution/distribution ``docs/spec/auth/token.md``),
:mod:`pinning.oci.blobs` (HEAD-skip, mount, chunked upload, streamed copy from another
registry), and this module (manifests, whole-image push, image documents).

The bytes sent are the bytes hashed; the digest the registry answers is checked against ours,
and blobs and manifests read by digest are checked against it. Credentials go only to the
registry's own scheme, host and port (an upload ``Location`` elsewhere gets none), and any
secret pin sent is masked in the registry text it shows. A malformed registry address is a
:class:`~pinning.errors.UsageError` (exit 2); every other failure is a
:class:`~pinning.errors.BuildError` (exit 8) naming the registry, the request and the status,
never a secret.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from pinning.errors import BuildError
from pinning.oci.blobs import BlobStore, PushAborted
from pinning.oci.documents import MEDIA_LAYER_GZIP, MEDIA_MANIFEST, ImageDocs, LayerBlob
from pinning.oci.reference import parse_pinned
from pinning.oci.text import HINT, clip_text
from pinning.util.digests import sha256_digest
from pinning.util.jsonread import load_json
from pinning.util.progress import NULL_PROGRESS, Progress

MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
MEDIA_DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MANIFEST_TYPES = (MEDIA_MANIFEST, MEDIA_INDEX, MEDIA_DOCKER_MANIFEST, MEDIA_DOCKER_LIST)
"""Every manifest media type pin reads (OCI image-spec v1.1 manifest and index; Docker image
manifest v2 schema 2 and its manifest list)."""
INDEX_TYPES = (MEDIA_INDEX, MEDIA_DOCKER_LIST)

DEFAULT_JOBS = 4
"""Blobs pushed at once by :meth:`Registry.push_image` (pin's default)."""
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
"""The largest manifest pin reads, 4 MiB (pin's bound, taken from the distribution spec's
"Client and registry implementations SHOULD expect to be able to support manifest pushes of
at least 4 megabytes": opencontainers/distribution-spec v1.1.0 ``spec.md``, "Pushing
Manifests", released 2024-02-15 per
https://opencontainers.org/posts/blog/2024-03-13-image-and-distribution-1-1/; the sentence
came in with https://github.com/opencontainers/distribution-spec/pull/293, 2021-08-05). A
registry may accept larger ones; pin refuses to read them."""


def media_type_of(manifest: bytes) -> str:
    """The ``mediaType`` a manifest declares, else the OCI image manifest type."""
    try:
        doc = load_json(manifest, BuildError, label="the manifest")
    except BuildError:
        return MEDIA_MANIFEST
    value = doc.get("mediaType") if isinstance(doc, dict) else None
    return value if isinstance(value, str) and value else MEDIA_MANIFEST



class Registry(BlobStore):
    """A registry at ``base`` (see :func:`parse_address`); ``timeout`` in seconds per request;
    ``ca_cert`` the PEM CA that signed its certificate (see :func:`resolve_ca`);
    ``credentials`` to sign in with instead of the Docker config's (``pin login`` checks
    new ones this way).

    A malformed ``base`` raises :class:`~pinning.errors.UsageError` (exit 2, see
    :func:`parse_address`). Nothing is sent before the first call. Every method raises
    :class:`BuildError` (exit 8)
    naming the registry when it cannot be reached, its TLS certificate is not trusted, it
    asks for credentials pin does not have or refuses them, or it answers an unexpected
    status (its error text cut to :data:`ERROR_TEXT_CHARS` characters, :func:`clip_text`).
    Safe to use from several threads (one HTTP session per thread). ``host`` is the registry
    as image references write it (``docker.io``, ``127.0.0.1:5000``), ``endpoint`` the
    ``HOST[:PORT]`` connected to, ``base`` the URL once the scheme is known; ``stats`` counts
    what pushes did (:class:`PushStats`). ``close()`` (or ``with``) releases the connections.
    """

    def push_image(self, repo: str, tag: str, docs: ImageDocs, *,
                   progress: Progress = NULL_PROGRESS, jobs: int = DEFAULT_JOBS) -> str:
        """Push the layers and config of ``docs`` (``jobs`` blobs at once), then its manifest
        under ``tag``; return the manifest digest (checked against the registry's).

        Each blob is skipped when present, mounted from its ``source`` when that is another
        repository of this registry, uploaded (chunked above :data:`CHUNK_SIZE`), or, when
        pin does not hold its bytes, streamed from its ``source``. ``progress`` gets one
        task per blob (``push layer I/N sha256:...``, bytes). The first failure stops the
        other blobs between chunks and is raised.
        """
        count = len(docs.layers)
        work: list[tuple[bytes | None, str, int, str | None, str]] = []
        seen: set[str] = set()
        for index, layer in enumerate(docs.layers, 1):
            if layer.digest in seen:
                continue
            seen.add(layer.digest)
            work.append((layer.data, layer.digest, layer.size, layer.source,
                         f"push layer {index}/{count} {layer.digest[:19]}"))
        config_digest = docs.config_digest
        if config_digest not in seen:
            work.append((docs.config, config_digest, len(docs.config), None,
                         f"push config {config_digest[:19]}"))
        self._base_url()  # find the scheme once, before the threads
        abort = threading.Event()
        tasks = [progress.task(label, size) for _, _, size, _, label in work]
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(work))),
                                thread_name_prefix="pin-push") as pool:
            futures: list[Future[None]] = [
                pool.submit(self._push_blob, repo, data=data, digest=digest, size=size,
                            source=source, task=task, abort=abort)
                for (data, digest, size, source, _), task in zip(work, tasks, strict=True)]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [f for f in futures if f in done and f.exception() is not None
                      and not isinstance(f.exception(), PushAborted)]
            if failed:
                abort.set()
                for future, task in zip(futures, tasks, strict=True):
                    if future.cancel():
                        task.done()
        self._close_idle_sessions()
        for source in list(self._sources.values()):
            source._close_idle_sessions()
        if failed:
            error = failed[0].exception()
            assert error is not None
            raise error
        return self.put_manifest(repo, tag, docs.manifest, media_type_of(docs.manifest))

    # -- manifests -------------------------------------------------------------------------

    def put_manifest(self, repo: str, reference: str, manifest: bytes,
                     media_type: str = MEDIA_MANIFEST) -> str:
        """Put ``manifest`` bytes under ``reference`` (a tag, or its own digest); return the
        digest, checked against the one the registry answers.
        """
        ours = sha256_digest(manifest)
        if reference.startswith("sha256:") and reference != ours:
            raise BuildError(f"Registry {self.base}: manifest put as {reference}, but its "
                             f"bytes hash to {ours}.")
        resp = self._request("PUT", f"/v2/{self._repo(repo)}/manifests/{reference}", (201,),
                             repo=repo, push=True, data=manifest,
                             headers={"Content-Type": media_type})
        theirs = resp.headers.get("Docker-Content-Digest", ours)
        if theirs != ours:
            raise BuildError(f"Registry {self.base}: manifest stored as "
                             f"{clip_text(self._mask(theirs))}, pin sent {ours}; the registry "
                             "rewrote the bytes.")
        return ours

    def manifest_digest(self, repo: str, reference: str, *,
                        accept: tuple[str, ...] = MANIFEST_TYPES) -> str | None:
        """Digest of ``repo:reference`` (tag or digest), or ``None`` when absent."""
        resp = self._request("HEAD", f"/v2/{self._repo(repo)}/manifests/{reference}",
                             (200, 404), repo=repo, headers={"Accept": ", ".join(accept)})
        if resp.status_code == 404:
            return None
        return resp.headers.get("Docker-Content-Digest")

    def fetch_manifest(self, repo: str, reference: str, *,
                       accept: tuple[str, ...] = MANIFEST_TYPES) -> tuple[bytes, str]:
        """The exact manifest bytes of ``repo:reference`` and their media type (the answer's
        ``Content-Type``, else the document's ``mediaType``). At most 4 MiB; a reference that
        is a digest is checked against the bytes.
        """
        answer = self._request("GET", f"/v2/{self._repo(repo)}/manifests/{reference}",
                               (200,), repo=repo, headers={"Accept": ", ".join(accept)},
                               limit=MAX_MANIFEST_BYTES)
        data = answer.content
        if reference.startswith("sha256:") and sha256_digest(data) != reference:
            raise BuildError(f"Registry {self.base}: manifest {reference} of {repo} came back "
                             "with other bytes.", hint=HINT)
        media = answer.headers.get("Content-Type", "").split(";", 1)[0].strip()
        if media not in MANIFEST_TYPES:
            media = media_type_of(data)
        return data, media

    def get_manifest(self, repo: str, reference: str, *,
                     accept: tuple[str, ...] = (MEDIA_MANIFEST,)) -> bytes:
        """The exact manifest bytes of ``repo:reference`` (at most 4 MiB; a larger answer is
        a :class:`BuildError`; a digest reference is checked against the bytes).
        """
        return self.fetch_manifest(repo, reference, accept=accept)[0]

    def referrers(self, repo: str, digest: str, *,
                  artifact_type: str | None = None) -> bytes | None:
        """The OCI 1.1 referrers index of ``digest`` (``GET /v2/REPO/referrers/DIGEST``,
        optionally filtered by ``artifact_type``), or ``None`` when the registry has no
        referrers API (it answers 404; the API came with opencontainers/distribution-spec
        v1.1.0, released 2024-02-15 per
        https://opencontainers.org/posts/blog/2024-03-13-image-and-distribution-1-1/;
        observed in pin's tests: Debian's ``docker-registry`` 2.8.2 answers 404 to
        ``GET /v2/<repo>/referrers/<digest>``).
        """
        params = {"artifactType": artifact_type} if artifact_type else None
        answer = self._request("GET", f"/v2/{self._repo(repo)}/referrers/{digest}",
                               (200, 404), repo=repo, headers={"Accept": MEDIA_INDEX},
                               params=params, limit=MAX_MANIFEST_BYTES)
        return answer.content if answer.status_code == 200 else None

def _platform_entry(index: dict[str, Any], platform: str, ref: str) -> dict[str, Any]:
    """The ``manifests`` entry of an index for ``platform`` (``os/arch[/variant]``)."""
    want_os, _, rest = platform.partition("/")
    want_arch, _, want_variant = rest.partition("/")
    entries = index.get("manifests")
    if not isinstance(entries, list):
        raise ValueError("the index has no manifests list")
    offered = []
    for entry in entries:
        plat = entry.get("platform") if isinstance(entry, dict) else None
        if not isinstance(plat, dict):
            continue
        offered.append("/".join(str(plat.get(k)) for k in ("os", "architecture", "variant")
                                if plat.get(k)))
        if plat.get("os") == want_os and plat.get("architecture") == want_arch and (
                not want_variant or plat.get("variant") == want_variant):
            return dict(entry)
    raise BuildError(f"Image {ref} is an index without a {platform} manifest (it has: "
                     f"{clip_text(', '.join(offered) or 'none', 200)}).",
                     hint="Pick a base built for the trial's platform, by the digest of that "
                          "platform's manifest or of an index that has it.")


def _descriptor(value: Any) -> tuple[str, int, str]:
    """``(digest, size, mediaType)`` of a descriptor; ValueError when malformed."""
    if not isinstance(value, dict):
        raise ValueError("a descriptor is not an object")
    digest, size = value.get("digest"), value.get("size")
    media = value.get("mediaType", MEDIA_LAYER_GZIP)
    if not (isinstance(digest, str) and digest.startswith("sha256:") and len(digest) == 71
            and all(c in "0123456789abcdef" for c in digest[7:])):
        raise ValueError(f"descriptor digest {str(digest)[:80]!r} is not sha256:<64 hex>")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ValueError(f"descriptor size {str(size)[:40]!r} is not a byte count")
    if not isinstance(media, str):
        raise ValueError("descriptor mediaType is not a string")
    return digest, size, media


def fetch_docs(registry_url: str, ref: str, *, layers: bool = True,
               platform: str = "linux/amd64", ca_cert: Path | None = None) -> ImageDocs:
    """The image ``ref`` (``HOST/REPO[:TAG]@sha256:<digest>``) as stored in the registry at
    ``registry_url``: its exact manifest and config bytes, and its layers.

    An OCI index or Docker manifest list is resolved to the ``platform`` manifest
    (``os/arch[/variant]``); OCI and Docker v2 manifests are read. With ``layers`` each
    layer's bytes are downloaded and checked; without, the :class:`LayerBlob` objects carry
    ``data=None``, the descriptor's size and media type and ``source`` = ``HOST/REPO`` of
    the registry read (nothing but manifests and config is downloaded). Raises
    :class:`BuildError` (exit 8) for a reference without a digest, a registry failure or a
    document that is not a well-formed image.
    """
    image = parse_pinned(ref)
    repo, digest = image.repository, image.required_digest
    with Registry(registry_url, ca_cert=ca_cert) as reg:
        try:
            manifest, media = reg.fetch_manifest(repo, digest)
            doc = load_json(manifest, BuildError, label=f"Registry {reg.base}: {ref}")
            if media in INDEX_TYPES or (isinstance(doc, dict) and "manifests" in doc
                                        and "layers" not in doc):
                entry = _platform_entry(doc, platform, ref)
                manifest, media = reg.fetch_manifest(repo, _descriptor(entry)[0])
                doc = load_json(manifest, BuildError, label=f"Registry {reg.base}: {ref}")
                if media in INDEX_TYPES:
                    raise ValueError(f"the {platform} entry is itself an index")
            config_digest = _descriptor(doc["config"])[0]
            config = reg.get_blob(repo, config_digest)
            diff_ids = load_json(config, BuildError, label=f"Registry {reg.base}: the "
                                 f"config of {ref}")["rootfs"]["diff_ids"]
            descriptors = [_descriptor(d) for d in doc["layers"]]
            if not isinstance(diff_ids, list) or len(diff_ids) != len(descriptors):
                raise ValueError("the config's diff_ids do not match the manifest's layers")
            source = f"{reg.host}/{repo}"
            blobs = tuple(
                LayerBlob(data=reg.get_blob(repo, layer_digest) if layers else None,
                          digest=layer_digest, diff_id=str(diff_id), media_type=layer_media,
                          source=source, length=size)
                for (layer_digest, size, layer_media), diff_id in zip(descriptors, diff_ids,
                                                                      strict=True))
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise BuildError(f"Registry {reg.base}: {ref} is not a well-formed OCI or Docker "
                             f"image ({clip_text(str(exc))}).") from None
    return ImageDocs(layers=blobs, config=config, manifest=manifest)
