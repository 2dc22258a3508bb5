"""Store registry credentials where Docker (and pin) read them: ``pin login``.

Like ``docker login`` (docker/cli ``cli/config/configfile/file.go`` and
``cli/config/credentials/native_store.go``, read 2026-12-01 at https://github.com/docker/cli;
the stored format is the one :mod:`pinning.oci.auth` reads): when the Docker config names a
credential helper for the registry (``credHelpers``, else ``credsStore``) the credentials go
to ``docker-credential-NAME store`` as ``{"ServerURL", "Username", "Secret"}``; otherwise
into ``auths[HOST].auth`` (base64 of ``user:password``) of ``config.json``, which is written
atomically with mode 0600 and keeps every other key as it was.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from pinning.errors import BuildError, UsageError
from pinning.oci import auth
from pinning.util.files import atomic_write_bytes

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
    doc: dict[str, Any] = auth.load_config(path) or {}
    key = auth.config_key(host)
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
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not path.exists():  # created private, as docker does; the rename keeps the mode
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
        atomic_write_bytes(path, data)
        os.chmod(path, 0o600)
    except OSError as exc:
        raise BuildError(f"Docker config {path}: cannot be written ({exc.strerror or exc}).",
                         hint="Point DOCKER_CONFIG at a folder you can write.") from None
    return str(path)


def _helper_store(name: str, key: str, username: str, password: str) -> None:
    """Run ``docker-credential-NAME store`` with the credentials on standard input."""
    program = auth.HELPER_PREFIX + name
    exe = shutil.which(program)
    if exe is None:
        raise BuildError(f"The Docker config names the credential helper {program}, which is "
                         "not on PATH.",
                         hint=f"Install {program}, or remove \"credsStore\" / \"credHelpers\" "
                              "from the Docker config.")
    payload = json.dumps({"ServerURL": key, "Username": username, "Secret": password})
    try:
        done = subprocess.run([exe, "store"], input=payload.encode(), capture_output=True,
                              timeout=auth.HELPER_TIMEOUT_S, check=False)
    except (subprocess.TimeoutExpired, OSError):
        raise BuildError(f"The credential helper {program} could not be run or did not "
                         "answer.", hint="Run it by hand to see why (e.g. a locked "
                                         "keychain).") from None
    if done.returncode != 0:
        text = " ".join(done.stdout.decode("utf-8", "replace").split())[:200]
        text = text.replace(password, "***")
        raise BuildError(f"The credential helper {program} failed (exit {done.returncode}): "
                         f"{text}", hint="Check the helper (a locked keychain?).")
