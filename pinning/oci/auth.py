"""Registry credentials from the Docker config, read the way the Docker CLI reads them.

pin reads the credentials ``docker login`` stores, the way the Docker CLI finds them
(docker/cli@0b4503c57f219814ed4ff48176c43fe82ae811d7:cli/config/configfile/file.go,
``GetAuthConfig`` / ``getConfiguredCredentialStore`` / ``decodeAuth``;
docker/cli@d2b87a0a3b065ad1089102f6b2906e78d0d785ae:cli/config/credentials/file_store.go,
``ConvertToHostname``;
docker/cli@5c5e169ebee1c5c73b4a05c782928abbc423b73d:cli/config/credentials/native_store.go,
``tokenUsername`` / ``getCredentialsFromStore``; commit dates not recorded):

- the file is ``$DOCKER_CONFIG/config.json``, else ``~/.docker/config.json``;
- the key of a registry is its ``HOST[:PORT]``; Docker Hub's (``docker.io``) is
  ``https://index.docker.io/v1/``;
- ``credHelpers[KEY]`` names a helper for that registry, else ``credsStore`` one for all;
  a helper is the program ``docker-credential-NAME``: ``get`` reads the key on stdin and
  prints ``{"Username": ..., "Secret": ...}``; the username ``<token>`` means the secret is
  an identity token; the text ``credentials not found in native keychain`` means no entry
  (docker/docker-credential-helpers@8ffd3bd390433c28816898513af9254e0fdf896c:client/client.go);
- else ``auths[KEY]``: ``auth`` (base64 of ``user:password``), or ``username`` /
  ``password``, and ``identitytoken``; a key written as a URL (``https://HOST/...``) matches
  its host.

Secrets never appear in a message, a ``repr`` or a log: errors name the file or the helper.
Every failure is a :class:`~pinning.errors.BuildError` (exit 8).

pin keeps this reader instead of the Docker SDK's ``docker.auth`` / ``docker.credentials``
(docker 7.2): those read a malformed config as empty, skip ``username`` / ``password``
entries, run a helper without a time limit and quote a failing helper's output (which may
hold the secret), and ``pin login`` must work without the ``image`` extra that brings them.
"""

from __future__ import annotations

import base64
import binascii
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pinning.errors import BuildError
from pinning.util.jsonread import load_json

DOCKER_HUB_KEY = "https://index.docker.io/v1/"
"""The config key of Docker Hub's credentials (moby ``registry.IndexServer``; moby/moby v28.3.0,
package registry, https://pkg.go.dev/github.com/docker/docker/registry, date not recorded)."""

DOCKER_HUB_NAMES = ("docker.io", "index.docker.io", "registry-1.docker.io")
"""Host names that mean Docker Hub (``IndexName``, ``IndexHostname``, ``DefaultRegistryHost`` in
the same moby package)."""

HELPER_PREFIX = "docker-credential-"
HELPER_NOT_FOUND = "credentials not found in native keychain"
"""What a credential helper prints when it holds no entry (docker-credential-helpers,
``errCredentialsNotFoundMessage``; commit above)."""
HELPER_TIMEOUT_S = 60.0
"""Seconds pin waits for a credential helper (pin's choice: a helper may ask a desktop
keychain to unlock)."""
MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""The largest Docker config file pin reads (pin's bound; real ones are a few KiB)."""

TOKEN_USERNAME = "<token>"
"""The helper username that marks the secret as an identity token (docker/cli
native_store.go ``tokenUsername``)."""


@dataclass(frozen=True)
class Credentials:
    """What pin signs in with at one registry: ``username`` and ``password`` (HTTP Basic, or
    Basic at a token server), or an ``identity_token`` (an OAuth2 refresh token); ``source``
    says where they came from for messages (``the "auths" entry 'HOST' in FILE`` or
    ``the credential helper docker-credential-NAME``). The secrets are left out of ``repr``.
    """

    username: str | None
    password: str | None = field(default=None, repr=False)
    identity_token: str | None = field(default=None, repr=False)
    source: str = ""

    @property
    def basic(self) -> str | None:
        """The ``Authorization`` value ``Basic base64(user:password)``, or ``None`` without a
        username and password.
        """
        if self.username is None or self.password is None:
            return None
        raw = f"{self.username}:{self.password}".encode()
        return "Basic " + base64.b64encode(raw).decode("ascii")


def docker_config_path() -> Path:
    """``$DOCKER_CONFIG/config.json`` when ``DOCKER_CONFIG`` is set, else
    ``~/.docker/config.json`` (the file may not exist).
    """
    folder = os.environ.get("DOCKER_CONFIG")
    if folder:
        return Path(folder) / "config.json"
    return Path.home() / ".docker" / "config.json"


def is_docker_hub(host: str) -> bool:
    """True for a Docker Hub host name (``docker.io``, ``index.docker.io``,
    ``registry-1.docker.io``, any case, optional ``:443``).
    """
    return host.lower().removesuffix(":443") in DOCKER_HUB_NAMES


def config_key(host: str) -> str:
    """The key Docker files ``host``'s credentials under: ``https://index.docker.io/v1/`` for
    Docker Hub, else ``host`` itself (``HOST[:PORT]``).
    """
    return DOCKER_HUB_KEY if is_docker_hub(host) else host


def key_host(key: str) -> str:
    """The ``HOST[:PORT]`` a config key names: the host of a URL key (``https://h:5000/x`` ->
    ``h:5000``), else the text up to the first ``/`` (docker/cli ``ConvertToHostname``).
    """
    if "://" in key:
        try:
            parts = urlsplit(key)
        except ValueError:
            return key
        if parts.hostname:
            return parts.netloc.rsplit("@", 1)[-1]
    return key.split("/", 1)[0]


def load_config(path: Path | None = None) -> dict[str, Any] | None:
    """The Docker config at ``path`` (default :func:`docker_config_path`) as a JSON object, or
    ``None`` when there is no such file. Raises :class:`BuildError` naming the file when it
    cannot be read or is not a JSON object (never quoting its text, which holds secrets).
    """
    path = path or docker_config_path()
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BuildError(f"Docker config {path}: cannot be read ({exc.strerror}).",
                         hint="Fix the file's permissions, or point DOCKER_CONFIG at another "
                              "folder.") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise BuildError(f"Docker config {path}: larger than {MAX_CONFIG_BYTES} bytes.",
                         hint="Point DOCKER_CONFIG at a folder with a real config.json.")
    doc = load_json(raw, BuildError, label=f"Docker config {path}",  # never quotes the file
                    hint="Fix the file (`docker login` rewrites it), or point DOCKER_CONFIG "
                         "at another folder.")
    if not isinstance(doc, dict):
        raise BuildError(f"Docker config {path}: the top level is not a JSON object.",
                         hint="Fix the file, or point DOCKER_CONFIG at another folder.")
    return doc


def credentials(host: str, *, path: Path | None = None) -> Credentials | None:
    """The credentials the Docker config holds for registry ``host`` (``HOST[:PORT]``, as in
    image references; Docker Hub by any of its names), or ``None`` when it holds none.

    A helper (``credHelpers`` for the host, else ``credsStore``) is asked first; the
    ``auths`` entry is used when no helper is configured. Raises :class:`BuildError` naming
    the file or the helper when the config is malformed, or the helper is missing, fails, or
    prints something that is not its JSON answer. ``path`` overrides the config file.
    """
    path = path or docker_config_path()
    doc = load_config(path)
    if doc is None:
        return None
    key = config_key(host)
    helper = helper_for(doc, key, path)
    if helper:
        return _from_helper(helper, key)
    return _from_auths(doc, key, host, path)


def helper_for(doc: dict[str, Any], key: str, path: Path) -> str | None:
    """The credential helper name (``NAME`` of ``docker-credential-NAME``) the Docker config
    ``doc`` (read from ``path``, named in errors) sets for config key ``key``:
    ``credHelpers`` (as ``key``, ``https://key`` or ``http://key``), else ``credsStore``;
    ``None`` when neither is set. Raises :class:`BuildError` for a name with a path in it.
    """
    helpers = doc.get("credHelpers")
    if isinstance(helpers, dict):
        for name in (key, f"https://{key}", f"http://{key}"):
            value = helpers.get(name)
            if isinstance(value, str) and value:
                return _helper_name(value, f'"credHelpers" entry {name!r}', path)
    store = doc.get("credsStore")
    if isinstance(store, str) and store:
        return _helper_name(store, '"credsStore"', path)
    return None


def _helper_name(name: str, where: str, path: Path) -> str:
    """``name`` when it is a plain helper suffix (no path separator); else BuildError."""
    if "/" in name or "\\" in name or name.startswith(".") or name.strip() != name:
        raise BuildError(f"Docker config {path}: {where} is {name!r}, not a helper name "
                         f"(the suffix of {HELPER_PREFIX}NAME).",
                         hint='Write the helper\'s name, e.g. "pass" for '
                              "docker-credential-pass.")
    return name


def run_helper(name: str, verb: str, payload: str) -> subprocess.CompletedProcess[bytes]:
    """Run ``docker-credential-NAME VERB`` with ``payload`` on standard input (at most
    :data:`HELPER_TIMEOUT_S` seconds) and return what it did; its output is for the caller,
    never for a message (it may hold the secret). Raises :class:`BuildError` when the helper
    is not on PATH, cannot be run or does not answer in time.
    """
    program = HELPER_PREFIX + name
    exe = shutil.which(program)
    where = f"the credential helper {program}"
    if exe is None:
        raise BuildError(f"The Docker config names {where}, which is not on PATH.",
                         hint=f"Install {program}, or remove \"credsStore\" / \"credHelpers\" "
                              "from the Docker config and run `docker login` again.")
    try:
        return subprocess.run([exe, verb], input=payload.encode(), capture_output=True,
                              timeout=HELPER_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise BuildError(f"{where} did not answer in {HELPER_TIMEOUT_S:g} s.",
                         hint="Unlock its keychain, or run it by hand: " + (
                             f"echo {payload} | {program} get" if verb == "get"
                             else f"{program} list")) from None
    except OSError as exc:
        raise BuildError(f"{where} cannot be run ({exc.strerror}).",
                         hint=f"Check {exe} is executable.") from None


def _from_helper(name: str, key: str) -> Credentials | None:
    """Ask ``docker-credential-NAME get`` for ``key``; ``None`` when it has no entry."""
    program = HELPER_PREFIX + name
    where = f"the credential helper {program}"
    done = run_helper(name, "get", key)
    out = done.stdout.decode("utf-8", "replace").strip()
    if done.returncode != 0:
        if HELPER_NOT_FOUND in out:
            return None
        # Nothing the helper printed is quoted: its output may hold the secret.
        raise BuildError(f"{where} failed (exit {done.returncode}) for {key}; pin does not "
                         "show its output, which may hold the secret.",
                         hint=f"Run it by hand to see why: echo {key} | {program} get; "
                              f"or run `docker login {key_host(key)}` again.")
    try:
        answer = load_json(out, BuildError, label=where)
    except BuildError:
        raise BuildError(f"{where} printed something that is not JSON for {key}.",
                         hint='Check the helper: `get` must print {"Username": ..., '
                              '"Secret": ...}.') from None
    user = answer.get("Username") if isinstance(answer, dict) else None
    secret = answer.get("Secret") if isinstance(answer, dict) else None
    if not isinstance(user, str) or not isinstance(secret, str) or not secret:
        raise BuildError(f"{where} answered for {key} without a string Username and Secret.",
                         hint="Run `docker login` again to store the credentials afresh.")
    if user == TOKEN_USERNAME:
        return Credentials(username=None, identity_token=secret, source=where)
    return Credentials(username=user, password=secret, source=where)


def _from_auths(doc: dict[str, Any], key: str, host: str, path: Path) -> Credentials | None:
    """The ``auths`` entry for ``key`` (or any key whose host is the same)."""
    auths = doc.get("auths")
    if auths is None:
        return None
    if not isinstance(auths, dict):
        raise BuildError(f'Docker config {path}: "auths" is not an object.',
                         hint="Fix the file, or run `docker login` to rewrite it.")
    entry_key: str | None = key if key in auths else None
    if entry_key is None:
        wanted = {key_host(key).lower(), host.lower()}
        entry_key = next((k for k in auths
                          if isinstance(k, str) and key_host(k).lower() in wanted), None)
    if entry_key is None:
        return None
    entry = auths[entry_key]
    where = f'the "auths" entry {entry_key!r} in {path}'
    if not isinstance(entry, dict):
        raise BuildError(f"Docker config: {where} is not an object.",
                         hint="Fix the file, or run `docker login` to rewrite it.")
    user = entry.get("username")
    password = entry.get("password")
    token = entry.get("identitytoken")
    encoded = entry.get("auth")
    if isinstance(encoded, str) and encoded:
        user, password = _decode_auth(encoded, where)
    if not isinstance(token, str) or not token:
        token = None
    if not isinstance(user, str) or not user:
        user = None
    if not isinstance(password, str):
        password = None
    if token is None and (user is None or password is None):
        return None
    return Credentials(username=user, password=password, identity_token=token, source=where)


def _decode_auth(encoded: str, where: str) -> tuple[str, str]:
    """``user`` and ``password`` from an ``auth`` value (base64 of ``user:password``; NULs
    trimmed from the password as docker/cli ``decodeAuth`` does).
    """
    try:
        text = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        raise BuildError(f'Docker config: {where}: "auth" is not base64 of user:password.',
                         hint="Run `docker login` again to rewrite it.") from None
    user, sep, password = text.partition(":")
    if not sep or not user:
        raise BuildError(f'Docker config: {where}: "auth" does not decode to user:password.',
                         hint="Run `docker login` again to rewrite it.")
    return user, password.strip("\x00")


def engine_auth(host: str, *, path: Path | None = None) -> dict[str, str] | None:
    """The Docker SDK ``auth_config`` for registry ``host`` (``images.pull(...,
    auth_config=...)``): ``{"username", "password", "serveraddress"}`` or
    ``{"identitytoken", "serveraddress"}``, or ``None`` when the Docker config holds nothing
    for it. Raises :class:`BuildError` as :func:`credentials` does.
    """
    creds = credentials(host, path=path)
    if creds is None:
        return None
    server = config_key(host)
    if creds.identity_token is not None:
        return {"identitytoken": creds.identity_token, "serveraddress": server}
    if creds.username is None or creds.password is None:
        return None
    return {"username": creds.username, "password": creds.password, "serveraddress": server}
