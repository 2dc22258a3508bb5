"""One registry's connection: its address and scheme, one HTTP session per thread, TLS
trust, and the credentials pin holds for it (read once, never shown).

:class:`Connection` is the base of :class:`~pinning.oci.registry.Registry`;
:mod:`pinning.oci.transport` sends requests over it. Failures are
:class:`~pinning.errors.BuildError` (exit 8) naming the registry, never a secret.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from pinning.errors import BuildError
from pinning.oci import auth
from pinning.oci.address import (
    DEFAULT_CERTS_D,
    cert_error,
    parse_address,
    resolve_ca,
    ssl_context,
    tls_adapter,
)
from pinning.oci.text import HINT, MIN_MASKED_PASSWORD, clip_text, mask_secrets

if TYPE_CHECKING:
    from typing import Self

    import requests


class Connection:
    """A registry at ``base`` (see :func:`~pinning.oci.address.parse_address`): ``host``,
    ``endpoint``, ``timeout`` and the per-thread sessions; :class:`~pinning.oci.registry.Registry`
    documents the arguments.
    """

    def __init__(self, base: str, *, timeout: float = 60.0, ca_cert: Path | None = None,
                 credentials: auth.Credentials | None = None) -> None:
        address = parse_address(base)
        self.host = address.host
        self.endpoint = address.endpoint
        self.timeout = timeout
        self._ca_cert = ca_cert
        self._scheme = address.scheme
        self._ca = resolve_ca(self.host, ca_cert)
        self._context = ssl_context(*self._ca) if self._ca else None
        self._sessions: dict[threading.Thread, requests.Session] = {}
        self._lock = threading.RLock()  # the scheme probe opens a session under it
        self._auth_lock = threading.Lock()
        self._creds: auth.Credentials | None = credentials
        self._creds_read = credentials is not None
        self._basic: str | None = None
        self._tokens: dict[str, str] = {}

    # -- connection ------------------------------------------------------------------------

    @property
    def base(self) -> str:
        """``scheme://endpoint`` once the scheme is known, else the bare endpoint."""
        return f"{self._scheme}://{self.endpoint}" if self._scheme else self.endpoint

    def close(self) -> None:
        """Close every HTTP session this object opened."""
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            session.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _session(self) -> requests.Session:
        """The calling thread's HTTP session (``requests.Session`` is not documented as
        thread-safe).
        """
        thread = threading.current_thread()
        with self._lock:
            session = self._sessions.get(thread)
            if session is None:
                import requests

                session = requests.Session()
                if self._context is not None:
                    session.mount("https://", tls_adapter(self._context))
                self._sessions[thread] = session
            return session

    def _close_idle_sessions(self) -> None:
        """Close the sessions of threads that have ended (a push's workers)."""
        with self._lock:
            ended = [t for t in self._sessions if not t.is_alive()]
            sessions = [self._sessions.pop(t) for t in ended]
        for session in sessions:
            session.close()

    def _base_url(self) -> str:
        """``scheme://endpoint``; for a bare loopback host the first call finds the scheme."""
        if self._scheme is None:
            with self._lock:
                if self._scheme is None:
                    self._scheme = self._probe()
        return f"{self._scheme}://{self.endpoint}"

    def _probe(self) -> str:
        """``https`` when the loopback registry speaks TLS, else ``http`` when it answers plain
        HTTP; BuildError when its certificate is not trusted or neither answers.
        """
        import requests

        session = self._session()
        first: Exception
        try:
            with session.get(f"https://{self.endpoint}/v2/", timeout=self.timeout,
                             stream=True, allow_redirects=False):
                return "https"
        except requests.RequestException as exc:
            if cert_error(exc) is not None:
                raise self._tls_error(f"Registry {self.endpoint}: GET "
                                      f"https://{self.endpoint}/v2/", exc) from None
            first = exc
        try:
            with session.get(f"http://{self.endpoint}/v2/", timeout=self.timeout,
                             stream=True, allow_redirects=False):
                return "http"
        except requests.RequestException as exc:
            raise BuildError(
                f"Registry {self.endpoint}: neither HTTPS nor plain HTTP answered "
                f"(https: {clip_text(str(first), 200)}; http: {clip_text(str(exc), 200)}).",
                hint=HINT) from None

    def _tls_error(self, where: str, exc: BaseException) -> BuildError:
        """The paragraph for a certificate pin cannot verify: names the CA options."""
        cert = cert_error(exc)
        reason = (cert.verify_message or str(cert)) if cert is not None else str(exc)
        trust = (f"the system's CAs and {self._ca[0]} (from {self._ca[1]})" if self._ca
                 else "the system's CAs")
        certs_d = Path(os.environ.get("PIN_DOCKER_CERTS_D") or DEFAULT_CERTS_D)
        return BuildError(
            f"{where}: the registry's TLS certificate is not trusted by {trust}: "
            f"{clip_text(reason, 200)}.",
            hint=f"Give the CA that signed it: --ca-cert FILE or PIN_REGISTRY_CA=FILE, or "
                 f"install it as {certs_d}/{self.host}/ca.crt (as for Docker).")

    def _repo(self, repo: str) -> str:
        """The repository's path on the registry (``library/NAME`` for a one-part Docker Hub
        name).
        """
        if "/" not in repo and auth.is_docker_hub(self.endpoint):
            return f"library/{repo}"
        return repo

    def _credentials(self) -> auth.Credentials | None:
        """The Docker config's credentials for this registry (read once, on demand)."""
        with self._lock:  # a credential helper runs once, not once per thread
            if not self._creds_read:
                self._creds = auth.credentials(self.host)
                self._creds_read = True
            return self._creds

    def _secrets(self) -> tuple[str, ...]:
        """Every secret pin holds for this registry, as it may come back in a hostile
        answer: the credential part of each ``Authorization`` value sent (the Basic
        ``base64(user:password)`` and each bearer token, with and without the scheme word),
        the identity token, and the password when at least :data:`MIN_MASKED_PASSWORD`
        characters long. Reads nothing new (credentials not read yet are not listed).
        """
        values = [self._basic or "", *dict(self._tokens).values()]
        creds = self._creds if self._creds_read else None
        if creds is not None:
            values += [creds.basic or "", creds.identity_token or ""]
            if creds.password and len(creds.password) >= MIN_MASKED_PASSWORD:
                values.append(creds.password)
        out = [v for v in values if v]
        out += [v.split(" ", 1)[1] for v in out if v.startswith(("Basic ", "Bearer "))]
        return tuple(dict.fromkeys(v for v in out if v))

    def _mask(self, text: str) -> str:
        """``text`` (a registry's answer) with every secret of :meth:`_secrets` masked."""
        return mask_secrets(text, self._secrets())

    def _no_credentials(self, where: str) -> BuildError:
        """The paragraph for a registry that asks for credentials pin does not have."""
        return BuildError(
            f"{where} needs credentials, and the Docker config ({auth.docker_config_path()}) "
            f"holds none for {auth.config_key(self.host)}.",
            hint=f"Run `docker login {self.host}` (pin reads what Docker stores: "
                 "DOCKER_CONFIG or ~/.docker/config.json, credsStore and credHelpers).")

    def _refused(self, where: str, body: str, push: bool) -> BuildError:
        """The paragraph for credentials the registry refused (401 after signing in)."""
        creds = self._credentials()
        if creds is None:
            return self._no_credentials(where)
        detail = f": {body}" if body else ""
        return BuildError(
            f"{where} refused the credentials from {creds.source} (401){detail}.",
            hint=f"Run `docker login {self.host}` again with a user that may "
                 f"{'push to' if push else 'read'} this repository, or fix the entry in "
                 f"{auth.docker_config_path()}.")

    def _denied(self, where: str, body: str, push: bool) -> BuildError:
        """The paragraph for a 403: signed in, but not allowed."""
        creds = self._credentials()
        who = f"the credentials from {creds.source}" if creds else "anonymous access"
        return BuildError(
            f"{where} answered 403 (denied) for {who}: {body}",
            hint=f"Ask the registry's admin for {'push' if push else 'pull'} access, or run "
                 f"`docker login {self.host}` as a user that has it.")
