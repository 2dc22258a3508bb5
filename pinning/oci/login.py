"""Store registry credentials where Docker (and pin) read them: ``pin login``.

Like ``docker login``
(docker/cli@0b4503c57f219814ed4ff48176c43fe82ae811d7:cli/config/configfile/file.go,
``SaveToWriter`` / ``encodeAuth``;
docker/cli@5c5e169ebee1c5c73b4a05c782928abbc423b73d:cli/config/credentials/native_store.go,
``storeCredentialsInStore``; commit dates not recorded, the same files
:mod:`pinning.oci.auth` cites; the stored format is the one it reads): when the Docker config
names a credential helper for the registry (``credHelpers``, else ``credsStore``) the
credentials go to ``docker-credential-NAME store`` as ``{"ServerURL", "Username", "Secret"}``;
otherwise into ``auths[HOST].auth`` (base64 of ``user:password``) of ``config.json``, which
pin writes atomically with mode 0600 and with every other key kept as it was.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
from pathlib import Path
from typing import Any

from pinning.errors import BuildError, UsageError
from pinning.oci import auth
from pinning.util.files import TargetChanged, atomic_write_bytes

__all__ = ["check_credentials", "store_credentials"]


def check_credentials(username: str, password: str) -> None:
    """Raise :class:`UsageError` (exit 2) for an empty username or password, or one holding
    a line break or NUL (or a username holding ``:``), which no registry accepts.
    """
    if not username or not password:
        raise UsageError("pin login needs a username and a non-empty password.",
                         hint="Pass --username NAME and the password on standard input "
                              "(--password-stdin).")
    if any(c in username + password for c in "\r\n\x00") or ":" in username:
        raise UsageError("The username or password holds a line break or NUL (or the "
                         "username a ':'), which no registry accepts.",
                         hint="Check what was piped into --password-stdin.")


def store_credentials(host: str, username: str, password: str, *,
                      path: Path | None = None) -> str:
    """Store ``username`` / ``password`` for registry ``host`` (``HOST[:PORT]``) and return
    where they went (``the credential helper docker-credential-NAME`` or the config file).

    Raises :class:`UsageError` (exit 2) for an empty username or password or one holding a
    line break, :class:`BuildError` (exit 8) when the config is malformed, cannot be
    written, or the helper fails (its message is never echoed with the secret).
    """
    check_credentials(username, password)
    path = path or auth.docker_config_path()
    key = auth.config_key(host)
    for _ in range(MAX_TRIES):
        raw = _read_raw(path)
        # An empty file is one pin (or another login) just created: no entries yet.
        doc: dict[str, Any] = (auth.load_config(path) or {}) if raw.strip() else {}
        helper = auth.helper_for(doc, key, path)
        if helper:
            _helper_store(helper, key, username, password)
            return f"the credential helper {auth.HELPER_PREFIX}{helper}"
        auths = doc.setdefault("auths", {})
        if not isinstance(auths, dict):
            raise BuildError(f'Docker config {path}: "auths" is not an object.',
                             hint="Fix the file, or point DOCKER_CONFIG at another folder.")
        token = base64.b64encode(f"{username}:{password}".encode()).decode("ascii")
        auths[key] = {"auth": token}
        data = (json.dumps(doc, indent="\t") + "\n").encode()
        try:
            # Only over the bytes read: a concurrent `pin login` or `docker login` that
            # rewrote the file meanwhile is read again, never overwritten.
            atomic_write_bytes(path, data, if_unchanged=raw)
            os.chmod(path, 0o600)
        except TargetChanged:
            continue
        except OSError as exc:
            raise BuildError(f"Docker config {path}: cannot be written "
                             f"({exc.strerror or exc}).",
                             hint="Point DOCKER_CONFIG at a folder you can write.") from None
        return str(path)
    raise BuildError(f"Docker config {path}: other programs kept rewriting it; pin tried "
                     f"{MAX_TRIES} times.", hint="Run pin login again.")


MAX_TRIES = 50
"""How often :func:`store_credentials` reads the config again after another writer changed
it between pin's read and write."""


def _read_raw(path: Path) -> bytes:
    """The config's bytes, creating it empty and private when absent: folder 0700 and file
    0600, as docker leaves a new one (file.go ``Save``, cited above, makes the folder 0700
    and writes through ``os.CreateTemp``, which opens with mode 0600:
    golang/go@62e6931cf79735a192ed57be05005e84720ed232:src/os/tempfile.go, date not
    recorded); a rename keeps the mode. Raises :class:`BuildError` when it cannot be created
    or read.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        return path.read_bytes()
    except OSError as exc:
        raise BuildError(f"Docker config {path}: cannot be read or created "
                         f"({exc.strerror or exc}).",
                         hint="Point DOCKER_CONFIG at a folder you can write.") from None


def _helper_store(name: str, key: str, username: str, password: str) -> None:
    """Run ``docker-credential-NAME store`` with the credentials on standard input."""
    program = auth.HELPER_PREFIX + name
    payload = json.dumps({"ServerURL": key, "Username": username, "Secret": password})
    done = auth.run_helper(name, "store", payload)
    if done.returncode != 0:
        # Its output is never quoted: a failing helper may echo what it was given.
        raise BuildError(f"The credential helper {program} failed (exit {done.returncode}); "
                         "the credentials were not stored.",
                         hint=f"Run `{program} list` by hand to see why (a locked keychain?).")
