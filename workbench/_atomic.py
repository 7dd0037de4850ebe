"""Output files that are either whole or untouched: checks before the work, atomic writes after.

:func:`check_output` says, before any work is done, whether ``path`` can be written: not a
directory, its parent folder exists (it is never created silently), and a file can be created
there.  :func:`write_text` / :func:`write_bytes` write to a temporary file in the same folder and
then :func:`os.replace` it onto ``path``, so a failure part-way (disk full, a signal) leaves the
old file as it was and no truncated one.  Every saver of the workbench goes through them.

What is at the target is never destroyed: a symbolic link at the output path, or a folder on it
below the working directory that is one, is refused with one line (a link someone planted would
make the workbench replace what it points to: ``report.html -> ~/.bashrc``) unless the user asks
to write through links (:func:`follow_symlinks`, the CLI's ``--follow-symlinks``: the link's
target file is replaced and the link stays); anything that is not a regular file or a new path
(a device such as ``/dev/null``, a FIFO, a socket, a directory) is refused with one line.

:func:`read_input` is the reading side: every loader reads its file through it, so devices,
FIFOs, directories and files over :data:`MAX_INPUT_BYTES` (default 1 GiB; raise it with the
``WORKBENCH_MAX_INPUT_BYTES`` environment variable) are one-line :class:`FormatError`s instead of
reading forever or blocking; :func:`read_json` reads a JSON file through it.  The readers also
refuse a graph of more than :data:`MAX_OPS` ops (``WORKBENCH_MAX_OPS``) before building it
(:func:`check_op_count`).
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from workbench.errors import FormatError, OutputError

#: Largest input file a loader reads (bytes), unless ``WORKBENCH_MAX_INPUT_BYTES`` says otherwise.
MAX_INPUT_BYTES = 1 << 30
#: Most ops a graph file (JSON, DOT) or a profile (one op per kernel) may give, unless
#: ``WORKBENCH_MAX_OPS`` says otherwise: a 1 GiB edge list names 4 * 10^7 ops, which would need
#: ~60 GB; 2 * 10^6 ops load within the bounds of docs/scale-bounds.md.
MAX_OPS = 2_000_000


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _is_link(path: str | os.PathLike[str], what: str) -> bool:
    """Whether ``path`` is a symbolic link; a one-line OutputError when it cannot even be looked
    at (a name too long for the file system, a component that is not a folder)."""
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except (OSError, ValueError) as exc:
        reason = _reason(exc) if isinstance(exc, OSError) else str(exc)
        raise OutputError(f"{what} {_name(path)}: {reason.lower()}") from None


_FOLLOW = contextvars.ContextVar("workbench_follow_symlinks", default=False)


@contextlib.contextmanager
def follow_symlinks(enabled: bool = True) -> Iterator[None]:
    """Within the block, outputs that are symbolic links are written *through* (the file they
    point to is replaced, the link stays) instead of refused: what the user asks for with the
    CLI's ``--follow-symlinks``.  Files the user never named (``plotly.min.js``) never are."""
    token = _FOLLOW.set(bool(enabled))
    try:
        yield
    finally:
        _FOLLOW.reset(token)


def _refuse_links(out: Path, what: str, *, never: bool) -> None:
    """A one-line OutputError when ``out`` is a symbolic link, or a folder on its path below
    the working directory is one (folders above it are the user's own set-up).  ``never``: a
    file the user did not name, which is never written through a link."""
    hint = ("(remove it)" if never else
            "(--follow-symlinks, or workbench.follow_symlinks() in Python, writes through it)")
    if _is_link(out, what):
        raise OutputError(f"{what} {_name(out)} is a symbolic link (to "
                          f"{_name(os.readlink(out))}); refusing to replace what it points to "
                          f"{hint}")
    try:
        here = Path.cwd()
        folder = Path(os.path.abspath(out)).parent
        below = folder.relative_to(here)
    except (OSError, ValueError):  # no working directory, or the output is outside it
        return
    step = here
    for part in below.parts:
        step = step / part
        if _is_link(step, what):
            raise OutputError(f"{what} {_name(out)}: folder {_name(step)} on its path is a "
                              f"symbolic link (to {_name(os.readlink(step))}); refusing to "
                              f"write through it {hint}")


def resolve_output(path: str | os.PathLike[str], *, what: str = "output",
                   through_links: bool | None = None) -> Path:
    """The file that writing ``path`` replaces: ``path`` itself, or, when links are followed
    (``through_links=True``, or ``None`` within :func:`follow_symlinks`), for a symbolic link
    (chains included) the file it points to, so that the link survives.  A one-line
    :class:`OutputError` when that is something other than a regular file or a new path (a
    device such as ``/dev/null``, a FIFO, a socket, a directory), a link loop, a name the file
    system cannot hold, or, when links are not followed (the default; always for a file the
    user did not name, such as the shared ``plotly.min.js``: ``through_links=False``), a
    symbolic link at the path or on a folder of it below the working directory.  O(depth)."""
    out = Path(path)
    follow = _FOLLOW.get() if through_links is None else through_links
    if not follow:
        _refuse_links(out, what, never=through_links is False)
    elif _is_link(out, what):
        try:
            out = Path(os.path.realpath(out, strict=False))
        except (OSError, RuntimeError):
            raise OutputError(f"{what} {_name(path)}: symbolic link loop") from None
    try:
        mode = out.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return out
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutputError(f"{what} {_name(path)}: symbolic link loop") from None
        raise OutputError(f"{what} {_name(path)}: {_reason(exc).lower()}") from None
    if stat.S_ISREG(mode):
        return out
    if stat.S_ISDIR(mode):
        raise OutputError(f"{what} {_name(path)} is a directory; give a file name")
    raise OutputError(f"{what} {_name(path)} is {_kind(mode)}, not a regular file; "
                      f"refusing to replace it (give a file name)")


def _name(path: str | os.PathLike[str]) -> str:
    """The path for a one-line message: ``repr`` of it, a long one cut in the middle so that its
    start and its last 80 characters (the folders and the file that the message is about) stay:
    at most 120 characters."""
    text = repr(str(path))
    return text if len(text) <= 120 else text[:37] + "..." + text[-80:]


def check_output(path: str | os.PathLike[str], *, what: str = "output") -> Path:
    """``path`` as a Path if a file can be written there, else a one-line :class:`OutputError`
    (a directory, a device or FIFO, a missing parent folder, no permission, a read-only file
    system).  It creates and removes a temporary file in the parent folder to be sure; O(1)."""
    if not str(path):
        raise OutputError(f"{what} is empty; give a file name")
    out = resolve_output(path, what=what)
    try:
        if out.is_dir():
            raise OutputError(f"{what} {str(out)!r} is a directory; give a file name")
        parent = out.parent
        if not parent.is_dir():
            kind = "is not a directory" if parent.exists() else "does not exist"
            raise OutputError(f"{what} {str(out)!r}: folder {str(parent)!r} {kind} (it is not "
                              f"created for you)")
        if out.exists() and not os.access(out, os.W_OK):
            raise OutputError(f"{what} {str(out)!r} is not writable")
    except OSError as exc:
        raise OutputError(f"{what} {_name(path)}: {_reason(exc).lower()}") from None
    try:
        fd, probe = tempfile.mkstemp(dir=parent, prefix=f".{out.name[:40]}.", suffix=".probe")
    except OSError as exc:
        raise OutputError(f"{what} {str(out)!r}: cannot write in {str(parent)!r} "
                          f"({_reason(exc)})") from None
    os.close(fd)
    os.unlink(probe)
    return out


def write_bytes(path: str | os.PathLike[str], data: bytes, *,
                through_links: bool | None = None) -> Path:
    """Write ``data`` to ``path`` atomically (module docstring); a one-line OutputError if it
    cannot, with the old file, if any, left intact.  ``through_links``: see
    :func:`resolve_output` (``False`` for files the user did not name)."""
    return write_chunks(path, (data,), through_links=through_links)


def write_chunks(path: str | os.PathLike[str], chunks: Iterable[bytes | str], *,
                 through_links: bool | None = None) -> Path:
    """:func:`write_bytes` of the concatenation of ``chunks`` (``str`` ones in UTF-8), written
    as they come: a large file (a 500,000-op graph's JSON) is never whole in memory."""
    given = Path(path)
    out = resolve_output(given, through_links=through_links)
    try:
        fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name[:40]}.", suffix=".tmp")
    except OSError as exc:
        raise OutputError(f"cannot write {str(out)!r} ({_reason(exc)})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)
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
    return given


def write_text(path: str | os.PathLike[str], text: str, *,
               through_links: bool | None = None) -> Path:
    """:func:`write_bytes` of ``text`` in UTF-8."""
    return write_bytes(path, text.encode("utf-8"), through_links=through_links)


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


def env_limit(name: str, default: int) -> int:
    """The limit the environment variable ``name`` sets (a positive integer; ``_`` and ``,``
    between digits allowed: ``2_000_000``), else ``default``.  A value that is not one is a
    one-line :class:`FormatError` naming the variable."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    digits = raw.replace("_", "").replace(",", "")
    value = int(digits) if digits.isascii() and digits.isdigit() else 0
    if value < 1:
        raise FormatError(f"{name} must be a positive integer, got {_name(raw)}")
    return value


def max_input_bytes() -> int:
    """The input size limit: ``WORKBENCH_MAX_INPUT_BYTES`` if set (a positive integer), else
    :data:`MAX_INPUT_BYTES`."""
    return env_limit("WORKBENCH_MAX_INPUT_BYTES", MAX_INPUT_BYTES)


def max_ops() -> int:
    """The most ops a graph read from a file may hold: ``WORKBENCH_MAX_OPS`` if set (a positive
    integer), else :data:`MAX_OPS`."""
    return env_limit("WORKBENCH_MAX_OPS", MAX_OPS)


def check_op_count(n: int, what: str) -> None:
    """A one-line :class:`FormatError` when ``n`` ops are more than :func:`max_ops`, raised by
    the readers once they know the count and before they build any op (``what`` says where the
    ops were counted: ``"'ops' lists"``, ``"the edges name"``)."""
    limit = max_ops()
    if n > limit:
        raise FormatError(f"{what} {n:,} ops, over the limit of {limit:,} ops per graph (raise "
                          f"it with WORKBENCH_MAX_OPS; docs/scale-bounds.md gives the time and "
                          f"memory a size takes)")


def check_input(path: str | os.PathLike[str], *, what: str = "file") -> Path:
    """``path`` as a Path if it is a regular file (through links) no larger than
    :func:`max_input_bytes`, else a one-line :class:`FormatError` that says why: missing, a
    directory, a device, a FIFO, a socket, too large.  O(1); nothing is opened."""
    src = Path(path)
    try:
        st = src.stat()
    except FileNotFoundError:
        raise FormatError(f"{what} {_name(path)} does not exist"
                          + (" (a broken symbolic link)" if src.is_symlink() else "")) from None
    except OSError as exc:
        raise FormatError(f"{what} {_name(path)}: cannot read ({_reason(exc)})") from None
    if not stat.S_ISREG(st.st_mode):
        raise FormatError(f"{what} {_name(path)} is {_kind(st.st_mode)}, not a regular file")
    limit = max_input_bytes()
    if st.st_size > limit:
        raise FormatError(f"{what} {_name(path)} is {st.st_size:,} bytes, over the input limit of "
                          f"{limit:,} (raise it with WORKBENCH_MAX_INPUT_BYTES)")
    return src


def read_input(path: str | os.PathLike[str], *, what: str = "file") -> bytes:
    """The bytes of ``path`` after :func:`check_input`; at most the limit is read even if the
    file grows meanwhile.  One-line :class:`FormatError` on any failure."""
    src = check_input(path, what=what)
    limit = max_input_bytes()
    try:
        fd = os.open(src, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise FormatError(f"{what} {_name(path)} is not a regular file")
            # read(n) allocates n bytes up front: size it by the file, not by the limit (a 1 KiB
            # file took 1 GiB of address space, a reader under a 2 GiB cap ran out; issue 34)
            data = f.read(min(limit, info.st_size) + 1)
            if len(data) > info.st_size:  # the file grew meanwhile: read on to the limit
                data += f.read(limit + 1 - len(data))
    except OSError as exc:
        raise FormatError(f"{what} {_name(path)}: cannot read ({_reason(exc)})") from None
    if len(data) > limit:
        raise FormatError(f"{what} {_name(path)} is over the input limit of {limit:,} bytes "
                          f"(raise it with WORKBENCH_MAX_INPUT_BYTES)")
    return data


def read_json(path: str | os.PathLike[str], *, what: str = "file") -> Any:
    """The JSON document of the file ``path``: :func:`read_input`, then
    :func:`workbench._checks.parse_json` (duplicate keys, integers past 4,300 digits and float
    literals that overflow are refused).  Every failure is a one-line :class:`FormatError`
    naming the file.  O(file size)."""
    from workbench._checks import parse_json

    data = read_input(path, what=what)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(f"{what} {_name(path)}: not UTF-8 text (is it really JSON?)") from None
    return parse_json(text, path)


__all__ = ["MAX_INPUT_BYTES", "MAX_OPS", "check_input", "check_op_count", "check_output",
           "env_limit", "max_input_bytes", "max_ops", "read_input",
           "follow_symlinks", "read_json", "resolve_output", "write_bytes", "write_chunks",
           "write_text"]
