"""pin's per-user cache folder, and a trusted cache of Python objects in it.

The matrix is validated once per content and code version, then read back from here
(:func:`load_cached` / :func:`save_cached`), so a command does not parse and validate the same
TOML on every start. The objects are pickled: pickle runs code while it loads, so a cache
file is read only from a folder that is no symbolic link, is owned by the effective user and
is writable by nobody else, and only when the file itself is a regular file of that user
that nobody else may write; anything else is a miss, never an error.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import stat
from pathlib import Path
from typing import Any

__all__ = ["cache_root", "load_cached", "save_cached", "trusted_folder_fd", "xdg_folder"]

#: A cache file larger than this is ignored (the matrix pickles to about 0.2 MB).
MAX_BYTES = 64 * 1024 * 1024


def xdg_folder(override: str, xdg: str, *home: str) -> Path | None:
    """Pin's folder of one XDG kind: ``$<override>``; else ``$<xdg>/pin`` when that is an
    absolute path (the XDG Base Directory Specification ignores a relative one); else
    ``~/<home...>/pin``; ``None`` with no home folder.
    """
    if os.environ.get(override):
        return Path(os.environ[override])
    base = os.environ.get(xdg, "")
    if base and os.path.isabs(base):
        return Path(base) / "pin"
    try:
        return Path.home().joinpath(*home, "pin")
    except RuntimeError:
        return None


def cache_root() -> Path:
    """Pin's cache folder: ``$PIN_CACHE_DIR``; else ``$XDG_CACHE_HOME/pin`` when that is an
    absolute path; else ``~/.cache/pin``; with no home folder, ``<temp>/pin-<uid>``.
    """
    found = xdg_folder("PIN_CACHE_DIR", "XDG_CACHE_HOME", ".cache")
    if found is not None:
        return found
    import tempfile  # (with shutil, lzma, bz2...) only without a home folder or to write

    return Path(tempfile.gettempdir()) / f"pin-{os.getuid()}"


def _trusted(st: os.stat_result, kind: int) -> bool:
    """True when ``st`` is of ``kind`` (``stat.S_IFDIR``/``S_IFREG``), owned by the effective
    user and not writable by group or others.
    """
    return (stat.S_IFMT(st.st_mode) == kind and st.st_uid == os.geteuid()
            and not st.st_mode & 0o022)


def trusted_folder_fd(folder: Path, *, create: bool) -> int | None:
    """An open descriptor of ``folder`` when pin may trust it, else ``None``: no symbolic
    link, owned by the effective user, writable by nobody else (a ``/tmp/pin-<uid>`` another
    user made first, or a shared ``PIN_CACHE_DIR``, is refused). ``create``: make it (mode
    0700) when absent. Never raises.
    """
    if create:
        with contextlib.suppress(OSError):
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        if _trusted(os.fstat(fd), stat.S_IFDIR):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def load_cached(folder: Path, name: str) -> Any | None:
    """The object pickled in ``folder/name``, or ``None`` when there is none or it may not be
    trusted (see the module docstring) or does not load. Never raises.
    """
    dir_fd = trusted_folder_fd(folder, create=False)
    if dir_fd is None:
        return None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    except OSError:
        return None
    finally:
        os.close(dir_fd)
    try:
        st = os.fstat(fd)
        if not _trusted(st, stat.S_IFREG) or st.st_size > MAX_BYTES:
            return None
        with os.fdopen(fd, "rb") as f:
            fd = -1
            return pickle.load(f)
    except Exception:  # a torn, foreign or stale pickle is a miss
        return None
    finally:
        if fd >= 0:
            os.close(fd)


def save_cached(folder: Path, name: str, value: Any) -> None:
    """Pickle ``value`` into ``folder/name`` (created 0700), written to a temporary file
    0600 and renamed over, so a reader sees the old file or the new one. Never raises: a
    cache that cannot be written is no cache.
    """
    dir_fd = trusted_folder_fd(folder, create=True)
    if dir_fd is None:
        return
    os.close(dir_fd)
    tmp = None
    try:
        import tempfile

        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, folder / name)
        tmp = None
    except Exception:
        pass
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
