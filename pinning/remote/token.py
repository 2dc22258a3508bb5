"""The bearer token pin sends to a pin service, and where it comes from.

Precedence (first found wins): ``--token-file FILE``, ``$PIN_TOKEN`` (the token itself),
``$PIN_TOKEN_FILE`` (a file), the site configuration's ``[report] token-file``. A token file
is a regular file whose first line is the token. A file that its group or other users may
read gets a warning, as OpenSSH warns about a private key "accessible by others"
(openssh/openssh-portable:authfile.c, ``sshkey_perm_ok``, which refuses a key its user owns
whose mode has any bit of ``077``; read 2026-12-01): pin only warns, since a token is
scoped and revocable. The token itself never appears in a message.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pinning.errors import UsageError

__all__ = ["ENV_TOKEN", "ENV_TOKEN_FILE", "MAX_TOKEN_CHARS", "Token", "read_token_file",
           "resolve_token"]

#: The environment variable holding the token itself.
ENV_TOKEN = "PIN_TOKEN"
#: The environment variable naming a token file.
ENV_TOKEN_FILE = "PIN_TOKEN_FILE"
#: The longest token accepted, in characters (``pin serve`` secrets are far shorter).
MAX_TOKEN_CHARS = 1024
_HINT = ("Put the token (`pin serve token create` prints it) alone on the file's first line, "
         "readable by you only (chmod 600).")


@dataclass(frozen=True)
class Token:
    """A bearer token and where it came from (``source``: ``--token-file FILE``,
    ``$PIN_TOKEN``, ``$PIN_TOKEN_FILE FILE``, ``[report] token-file FILE`` (``... in
    CONFIG`` when the configuration file is known)) for messages.
    ``repr`` hides the secret.
    """

    secret: str
    source: str

    def __repr__(self) -> str:
        return f"Token(source={self.source!r})"


def _check_secret(secret: str, source: str) -> str:
    """``secret`` stripped of surrounding blanks; ``UsageError`` (exit 2) naming ``source``
    (never the secret) when it is empty, too long or holds anything but visible ASCII (it
    goes into an HTTP header).
    """
    secret = secret.strip()
    if not secret:
        raise UsageError(f"The token from {source} is empty.", hint=_HINT)
    if len(secret) > MAX_TOKEN_CHARS:
        raise UsageError(f"The token from {source} is longer than {MAX_TOKEN_CHARS} "
                         "characters.", hint=_HINT)
    if not all("!" <= ch <= "~" for ch in secret):
        raise UsageError(f"The token from {source} holds a blank, a control or a non-ASCII "
                         "character; a bearer token is visible ASCII only.", hint=_HINT)
    return secret


def read_token_file(path: Path, source: str,
                    warn: Callable[[str], None] | None = None) -> Token:
    """The token on the first line of the regular file ``path`` (at most 64 KiB read).

    ``warn`` gets one line when the file's mode lets its group or others read it. Raises
    :class:`~pinning.errors.UsageError` (exit 2) naming ``source`` when the file is missing,
    unreadable, not a regular file, or its first line is not a token.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(f"{source}: cannot be read ({exc.strerror or exc}).",
                         hint=_HINT) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{source}: not a regular file.", hint=_HINT)
        raw = os.read(fd, 64 * 1024)
    except OSError as exc:
        raise UsageError(f"{source}: cannot be read ({exc.strerror or exc}).",
                         hint=_HINT) from exc
    finally:
        os.close(fd)
    if st.st_mode & 0o077 and warn is not None:
        warn(f"pin: warning: token file {path} is accessible by others (mode "
             f"{stat.S_IMODE(st.st_mode):04o}); chmod 600 {path}")
    try:
        first = raw.decode("utf-8").split("\n", 1)[0]
    except UnicodeDecodeError as exc:
        raise UsageError(f"{source}: not UTF-8 text.", hint=_HINT) from exc
    return Token(_check_secret(first, source), source)


def resolve_token(token_file: str | None, environ: Mapping[str, str],
                  config_token_file: Callable[[], Path | None] | None = None,
                  warn: Callable[[str], None] | None = None, *,
                  config: str | None = None) -> Token | None:
    """The token to send, by precedence: ``token_file`` (``--token-file``), ``$PIN_TOKEN``,
    ``$PIN_TOKEN_FILE``, then ``config_token_file()`` (the site configuration's ``[report]
    token-file``, asked only when nothing before gave one; ``config``: that configuration
    file, named in the token's source). Empty variables count as unset.
    ``None``: no token anywhere (requests then go without one). Raises
    :class:`~pinning.errors.UsageError` (exit 2) for a token file or value that is not usable
    (see :func:`read_token_file`).
    """
    if token_file:
        return read_token_file(Path(token_file), f"--token-file {token_file}", warn)
    if environ.get(ENV_TOKEN):
        return Token(_check_secret(environ[ENV_TOKEN], f"${ENV_TOKEN}"), f"${ENV_TOKEN}")
    if environ.get(ENV_TOKEN_FILE):
        name = environ[ENV_TOKEN_FILE]
        return read_token_file(Path(name), f"${ENV_TOKEN_FILE} {name}", warn)
    path = config_token_file() if config_token_file is not None else None
    if path is not None:
        where = f"[report] token-file {path}" + (f" in {config}" if config else "")
        return read_token_file(path, where, warn)
    return None
