"""Argument and key checks shared by the loaders and the public entry points.

Every check raises a one-line :class:`~workbench.errors.WorkbenchError` (the caller picks the
subclass) that names the offending key or value, where it was found, and, for a near miss, the
closest known name (``did you mean 'durations'?``, from :func:`difflib.get_close_matches`).
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from workbench.errors import OptionError, WorkbenchError

#: Most known names :func:`did_you_mean` compares a near miss with (difflib, ~7 µs a name).
_MAX_FUZZY = 20_000


def did_you_mean(name: object, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the known name nearest ``name`` (case-insensitive), or ``""``.

    >>> did_you_mean("sizez", ["sizes", "edges"])
    "; did you mean 'sizes'?"
    """
    text = str(name)
    by_fold = {k.casefold(): k for k in known}
    if text.casefold() in by_fold:
        return f"; did you mean {by_fold[text.casefold()]!r}?"
    if len(by_fold) > _MAX_FUZZY:  # difflib over 10^6 op ids took 7 s for one message
        return ""
    close = difflib.get_close_matches(text.casefold()[:200], list(by_fold), n=1, cutoff=0.6)
    return f"; did you mean {by_fold[close[0]]!r}?" if close else ""


def show(value: object, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters (default 80) with an ellipsis: safe to put in
    a one-line message (a 1 MB op id must not make a 1 MB "one-line" error)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def first_line(exc: BaseException, default: str | None = None) -> str:
    """The first non-empty line of an exception's message, else ``default`` (else the
    exception's type name): third-party errors in one line."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else (default or type(exc).__name__)


def warn_line(message: str, where: str = "workbench") -> None:
    """A :class:`UserWarning` that prints as one line on stderr: ``where:0: UserWarning: ...``
    with no Python source line under it (``warnings.warn`` shows the caller's code)."""
    import warnings

    warnings.warn_explicit(message.replace("\n", " "), UserWarning, where, 0,
                           module="workbench")


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads(..., object_pairs_hook=unique_keys)``: a JSON object as a dict, or a one-line
    :class:`~workbench.errors.FormatError` naming a key given twice (``json`` keeps the last one
    silently).  O(keys)."""
    from workbench.errors import FormatError

    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise FormatError(f"duplicate key {show(key)} in a JSON object (the reader "
                                  f"would keep only the last value)")
            seen.add(key)
    return out


def parse_json(text: str, where: object, *, nested: str = "JSON nested too deeply",
               object_hook: Callable[[list[tuple[str, Any]]], Any] | None = None) -> Any:
    """``text`` parsed as JSON with duplicate keys refused (:func:`unique_keys`); every failure a
    one-line :class:`~workbench.errors.FormatError` starting with ``where`` (the file): the line
    and column of invalid JSON, ``nested`` for a document nested past Python's recursion
    limit, or an integer longer than Python converts (``sys.get_int_max_str_digits``, 4,300
    digits: no size, time or count is that large).  ``object_hook``: builds each object from
    its key/value pairs instead of :func:`unique_keys` (it must refuse duplicates too).
    O(len(text))."""
    from workbench.errors import FormatError

    try:
        if object_hook is None:
            return decode_json(text)
        return json.loads(text, object_pairs_hook=object_hook, parse_float=_finite_float)
    except FormatError as exc:
        raise FormatError(f"{where}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise FormatError(f"{where}: line {exc.lineno}, column {exc.colno}: invalid JSON "
                          f"({exc.msg}; truncated file?)") from None
    except RecursionError:
        raise FormatError(f"{where}: {nested}") from None
    except ValueError as exc:  # an integer past Python's str->int digit limit (4,300)
        if "digits" not in str(exc):
            raise
        raise FormatError(f"{where}: an integer of more than {_max_digits()} digits (no "
                          f"figure the workbench reads is that large)") from None


def _finite_float(text: str) -> float:
    """A JSON number literal as a float, refused when it overflows (``1e400``, or 5,000 digits
    with a decimal point, silently became ``inf``).  ``Infinity`` and ``NaN`` written as such
    are JSON constants and stay what they say.  O(len(text))."""
    from workbench.errors import FormatError

    value = float(text)
    if math.isinf(value):
        shown = text if len(text) <= 24 else f"{text[:12]}...{text[-8:]} ({len(text):,} characters)"
        raise FormatError(f"the number {shown} is too large for a float (it would read as "
                          f"infinity)")
    return value


_DECODER = json.JSONDecoder(object_pairs_hook=unique_keys, parse_float=_finite_float).decode


def decode_json(text: str) -> Any:
    """``text`` parsed as :func:`parse_json` parses it (duplicate keys and overflowing floats
    refused), with one decoder made once and no message composed: what goes wrong raises as
    ``json`` (or :func:`unique_keys`) raises it, for callers with a fallback that names it."""
    return _DECODER(text)


def _max_digits() -> str:
    import sys

    get = getattr(sys, "get_int_max_str_digits", None)  # Python 3.11+
    return f"{get():,}" if get is not None and get() else "4,300"


@contextmanager
def recursion_headroom(frames: int) -> Iterator[None]:
    """Python's recursion limit raised by ``frames`` for the block, then restored: a reader or
    writer of nested data (graphs with control flow to their depth limit) works the same from
    any caller's stack depth.  Process-wide while it lasts, as the limit is."""
    import sys

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(old + frames)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def check_keys(raw: Mapping[str, Any], known: Iterable[str], where: str, *,
               error: type[WorkbenchError] = OptionError, what: str = "key") -> None:
    """An error naming the first key of ``raw`` not in ``known`` (and the nearest known one)."""
    allowed = set(known)
    for key in raw:
        if key not in allowed:
            raise error(f"{where}: unknown {what} {show(key)}{did_you_mean(key, allowed)} "
                        f"(known: {', '.join(sorted(allowed))})")


def check_format(data: Any, fmt: str, version: int, where: str, *, kind: str,
                 noun: str) -> None:
    """The ``"format"``/``"version"`` header of one of the workbench's JSON files: a one-line
    FormatError naming ``where`` unless ``data`` is an object of format ``fmt`` at ``version``
    (``kind``: what the file is, "a device profile"; ``noun``: what its version is of)."""
    from workbench.errors import FormatError

    if not isinstance(data, Mapping) or data.get("format") != fmt:
        raise FormatError(f"{where}: not {kind} (missing \"format\": \"{fmt}\")")
    if data.get("version") != version:
        raise FormatError(f"{where}: {noun} version {data.get('version')!r} is not supported "
                          f"(expected {version})")


def check_choice(value: Any, known: Iterable[str], what: str, *,
                 error: type[WorkbenchError] = OptionError) -> str:
    """``value`` as its known spelling, matched case-insensitively (``"GPU"`` is ``"gpu"``);
    anything else is an error listing the known values.

    >>> check_choice("Eager", ("eager", "graph"), "mode")
    'eager'
    """
    names = tuple(known)
    if isinstance(value, str):
        for name in names:
            if value.casefold() == name.casefold():
                return name
    hint = did_you_mean(value, names) if isinstance(value, str) else ""
    raise error(f"unknown {what} {show(value)}{hint} (known: {', '.join(names)})")


def check_limit(value: Any, name: str, *, allow_none: bool = True, allow_zero: bool = False,
                error: type[WorkbenchError] = OptionError) -> float | None:
    """A finite positive number (``allow_zero``: non-negative), or None where allowed; NaN,
    infinities, booleans and strings are one-line errors naming the option."""
    if value is None and allow_none:
        return None
    ok = (not isinstance(value, bool) and isinstance(value, (int, float))
          and math.isfinite(value) and (value >= 0 if allow_zero else value > 0))
    if not ok:
        need = "a non-negative" if allow_zero else "a positive"
        none = " or None" if allow_none else ""
        raise error(f"{name} must be {need} finite number{none}, got {show(value)}")
    return float(value)


__all__ = ["check_choice", "check_keys", "check_limit", "did_you_mean", "show", "unique_keys",
           "warn_line"]
