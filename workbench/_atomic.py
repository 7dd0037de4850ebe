"""Output files that are either whole or untouched: checks before the work, atomic writes after.

:func:`check_output` says, before any work is done, whether ``path`` can be written: not a
directory, its parent folder exists (it is never created silently), and a file can be created
there.  :func:`write_text` / :func:`write_bytes` write to a temporary file in the same folder and
then :func:`os.replace` it onto ``path``, so a failure part-way (disk full, a signal) leaves the
old file as it was and no truncated one.  Every saver of the workbench goes through them.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from workbench.errors import OutputError


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def check_output(path: str | os.PathLike[str], *, what: str = "output") -> Path:
    """``path`` as a Path if a file can be written there, else a one-line :class:`OutputError`
    (a directory, a missing parent folder, no permission, a read-only file system).  It creates
    and removes a temporary file in the parent folder to be sure; O(1)."""
    out = Path(path)
    if not str(path) or out.is_dir():
        raise OutputError(f"{what} {str(out)!r} is a directory; give a file name")
    parent = out.parent
    if not parent.is_dir():
        kind = "is not a directory" if parent.exists() else "does not exist"
        raise OutputError(f"{what} {str(out)!r}: folder {str(parent)!r} {kind} (it is not "
                          f"created for you)")
    if out.exists() and not os.access(out, os.W_OK):
        raise OutputError(f"{what} {str(out)!r} is not writable")
    try:
        fd, probe = tempfile.mkstemp(dir=parent, prefix=f".{out.name[:40]}.", suffix=".probe")
    except OSError as exc:
        raise OutputError(f"{what} {str(out)!r}: cannot write in {str(parent)!r} "
                          f"({_reason(exc)})") from None
    os.close(fd)
    os.unlink(probe)
    return out


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (module docstring); a one-line OutputError if it
    cannot, with the old file, if any, left intact."""
    out = Path(path)
    if out.is_dir():
        raise OutputError(f"{str(out)!r} is a directory; give a file name")
    try:
        fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name[:40]}.", suffix=".tmp")
    except OSError as exc:
        raise OutputError(f"cannot write {str(out)!r} ({_reason(exc)})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _mode_for(out))
        os.replace(tmp, out)
    except OSError as exc:
        _discard(tmp)
        raise OutputError(f"cannot write {str(out)!r} ({_reason(exc)}); the old file, if any, "
                          f"is unchanged") from None
    except BaseException:
        _discard(tmp)
        raise
    return out


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """:func:`write_bytes` of ``text`` in UTF-8."""
    return write_bytes(path, text.encode("utf-8"))


def _mode_for(out: Path) -> int:
    """The permission bits the file gets: those of the file it replaces, else 0666 less the
    umask (what ``open(path, "w")`` would have given)."""
    try:
        return stat.S_IMODE(out.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _discard(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


__all__ = ["check_output", "write_bytes", "write_text"]
