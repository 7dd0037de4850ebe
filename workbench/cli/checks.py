"""Checks of the ``workbench`` command's arguments that run before any work
(:mod:`workbench.cli`): the files a command reads and writes, the policy list, and standard
streams the shell closed.

* :func:`policy_names`: ``--policies nnc,,serial`` (an empty name) is a one-line error, not a
  list silently shortened to ``nnc,serial``.
* :func:`check_distinct_files`: two outputs of one command naming the same file (``--table X``
  with ``-o X``, also through ``./X``, a symbolic link, a hard link, or an ``--export-trace`` file
  of a row), or an output naming one of the command's inputs, is one line before the work
  starts, instead of one output silently replacing the other.
* :func:`occupy_closed_streams`: ``workbench compare ... >&-`` (stdout closed) runs with
  ``/dev/null`` on the closed descriptor, so that no file the command opens lands on descriptor
  1 or 2 (where a stray print would corrupt it) and the final flush has nothing to trip on; the
  command then exits 1 with one line on stderr saying the ranking was not printed.
* :func:`stdout_write_error`: stdout on ``/dev/full`` (or a full disk) is one line and exit 1,
  not an ``OSError`` traceback.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from workbench.errors import OptionError

#: Exit code of a command whose stdout was closed by the shell (its report is still written).
EXIT_STDOUT_CLOSED = 1


def _parse_value(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def key_values(pairs: Sequence[str], option: str = "--param") -> dict[str, Any]:
    """``--param``/``--dim`` values, ``KEY=VALUE`` each, as a dict (booleans, integers and
    floats parsed, anything else kept as text); a one-line OptionError for a malformed pair."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise OptionError(f"{option} expects KEY=VALUE, got {pair!r}")
        out[key.strip()] = _parse_value(value.strip())
    return out


def policy_names(text: str | None) -> list[str] | None:
    """The names of ``--policies`` (None when not given); a one-line OptionError for an empty
    list or an empty name between commas.  The names themselves are checked by the caller."""
    if text is None:
        return None
    names = [p.strip() for p in text.split(",")]
    if not any(names):
        raise OptionError("--policies expects comma-separated policy names")
    if not all(names):
        raise OptionError(f"--policies {text[:80]!r} has an empty name (two commas in a row, or "
                          f"a comma at an end); give comma-separated policy names")
    return names


def _identity(path: str | os.PathLike[str]) -> tuple[object, ...]:
    """What makes two paths the same file: the device and inode of an existing file (through
    links, so hard links match too), else the absolute path with every link resolved."""
    real = os.path.realpath(os.path.abspath(path))
    try:
        st = os.stat(real)
    except (OSError, ValueError):
        return ("path", os.path.normcase(real))
    return ("inode", st.st_dev, st.st_ino)


def check_distinct_files(outputs: Iterable[tuple[str, str | os.PathLike[str]]],
                         inputs: Iterable[tuple[str, str | os.PathLike[str]]] = ()) -> None:
    """A one-line OptionError when two of ``outputs`` ((option, path) pairs) are the same file,
    or one of them is one of ``inputs``; O(number of paths)."""
    seen: dict[tuple[object, ...], tuple[str, str]] = {}
    for option, path in inputs:
        seen.setdefault(_identity(path), (option, str(path)))
    readers = set(seen)
    for option, path in outputs:
        key = _identity(path)
        if key in seen:
            other, other_path = seen[key]
            if key in readers:
                raise OptionError(f"{option} {str(path)[:80]!r} would overwrite the {other} "
                                  f"{other_path[:80]!r} it reads; write somewhere else")
            raise OptionError(f"{option} {str(path)[:80]!r} and {other} {other_path[:80]!r} are "
                              f"the same file; give each output its own file")
        seen[key] = (option, str(path))


def trace_path(base: Path, policy: str) -> Path:
    """The ``--export-trace`` file of a row: ``out.json`` -> ``out.<policy>.json`` (also
    ``.json.gz``; no suffix: ``.json``)."""
    suffix = "".join(base.suffixes[-2:]) if base.name.endswith(".json.gz") else \
        (base.suffix or ".json")
    stem = base.name[:-len(suffix)] if base.name.endswith(suffix) else base.name
    return base.with_name(f"{stem}.{policy}{suffix}")


def compare_files(args: argparse.Namespace, output: Path, policies: Sequence[str]
                  ) -> tuple[list[tuple[str, Path]], list[tuple[str, str]]]:
    """The (option, path) outputs and inputs of ``workbench compare`` with ``args``: the report
    (``-o``), ``--table``, each ``--export-trace`` file of ``policies`` (and of the ``serial``
    and ``measured`` rows), the shared ``plotly.min.js`` of ``--plotlyjs directory``; the graph
    file, ``--measured``, ``--et`` and a ``--device`` file.  O(number of policies)."""
    def get(key: str) -> Any:
        return getattr(args, key, None)

    outputs: list[tuple[str, Path]] = [("-o", output)]
    if get("table") is not None:
        outputs.append(("--table", Path(get("table"))))
    if get("export_trace") is not None:
        base = Path(get("export_trace"))
        for policy in dict.fromkeys([*policies, "serial", "measured"]):
            outputs.append(("--export-trace", trace_path(base, policy)))
    if get("plotlyjs") == "directory":
        from workbench.viz.embed import PLOTLYJS_FILE

        outputs.append(("--plotlyjs directory", output.parent / PLOTLYJS_FILE))
    inputs = [(what, str(get(key))) for key, what in
              (("graph", "graph file"), ("measured", "profile --measured"),
               ("et", "execution trace --et")) if get(key)]
    device = str(get("device") or "")
    if "/" in device or os.sep in device or device.lower().endswith(".json"):
        inputs.append(("device file --device", device))
    return outputs, inputs


#: errno values of a write to standard output that cannot go on (``> /dev/full``, a full disk,
#: an I/O error, a descriptor closed meanwhile); a broken pipe is handled on its own.
STDOUT_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO,
                                 errno.EBADF})


def stdout_write_error(exc: OSError) -> str | None:
    """The one-line error for ``exc`` if it is a failed write to standard output (no file name,
    an errno of :data:`STDOUT_WRITE_ERRNOS`), else None: the workbench's own files fail as
    ``OutputError``/``FormatError`` naming the file, so only the streams raise these bare."""
    if exc.filename is not None or exc.errno not in STDOUT_WRITE_ERRNOS:
        return None
    return f"cannot write to standard output ({exc.strerror or exc})"


def silence_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so the interpreter's final flush does not
    print another traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # stdout is not a real file (captured in-process): nothing to silence


def occupy_closed_streams() -> bool:
    """Put ``/dev/null`` on standard output and error where the shell closed them (``>&-``,
    ``2>&-``: Python then sets ``sys.stdout`` to None); returns whether stdout was closed.  O(1)."""
    closed_out = sys.stdout is None
    for name, fd in (("stdout", 1), ("stderr", 2)):
        if getattr(sys, name) is not None:
            continue
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_WRONLY)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))
    return closed_out


def add_follow_symlinks(parser: Any) -> None:
    """The ``--follow-symlinks`` option of a command that writes files."""
    parser.add_argument("--follow-symlinks", action="store_true",
                        help="write through an output path that is a symbolic link (or has one "
                             "among its folders below the working directory) instead of "
                             "refusing it; the file it points to is replaced")


def encode_what_the_terminal_can() -> None:
    """Write stdout and stderr in their own encoding, anything it cannot encode as a
    backslash escape: under ``LC_ALL=C`` (an ASCII terminal) a graph named ``gräph`` printed
    ``gr\\xe4ph`` instead of ending the CLI with a ``UnicodeEncodeError``."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a detached or closed stream: nothing to print on
                pass


__all__ = ["EXIT_STDOUT_CLOSED", "add_follow_symlinks", "check_distinct_files", "compare_files",
           "encode_what_the_terminal_can", "key_values",
           "occupy_closed_streams", "policy_names", "silence_stdout", "stdout_write_error",
           "trace_path"]

