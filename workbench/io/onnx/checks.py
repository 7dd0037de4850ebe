"""What an ONNX file must be before its weights are trusted: checked once, at load time.

:func:`check_structure` refuses, each in one :class:`~workbench.errors.FormatError` naming the
tensor (or the opset) and the file:

* an ``opset_import`` without the default domain, or a version of it below 1 or above what the
  installed ``onnx`` knows (``onnx.checker`` refuses each);
* an initializer whose name repeats in its graph (the last one silently won: ``y = 36`` instead
  of ``4``), with a negative dimension, or of a type that has no tensor form (``STRING``,
  ``UNDEFINED``: a raw ``TypeError`` at run time);
* an initializer whose payload does not match its dimensions: ``raw_data`` or the typed fields
  holding another number of elements, no data at all for a non-empty tensor (4·2⁴⁰ floats with no
  data loaded, and a torch run then asked for 32 TiB);
* external data that cannot be read as declared: an empty location, one with a NUL, an absolute
  one, one that climbs out of the model's folder (``../``, or a symbolic link whose target is
  outside it), one that is not a regular file (a FIFO, ``/dev/zero``, a directory), a missing
  file, an offset or length that is negative, a length that is not the tensor's size, or a file
  too short for them.  Nothing is read: only ``os.stat`` of the location.

Before this check such initializers became random weights without a word (the loaders' ``except
Exception: pass``); the loaders now raise the same kind of error if a payload still fails.
Complexity: O(initializers + attribute tensors), sub-graphs included; no tensor data is read.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from workbench._terminal import visible
from workbench.errors import FormatError

#: Bits of one element of the packed types, and the ONNX type codes without a tensor form.
_PACKED_BITS = {"INT4": 4, "UINT4": 4, "FLOAT4E2M1": 4}
_NO_TENSOR_FORM = {"UNDEFINED", "STRING"}


def check_structure(onnx: Any, model: Any, path: Path) -> None:
    """Refuse, in one line, what :mod:`the module docstring <workbench.io.onnx.checks>`
    lists."""
    _check_opsets(onnx, model, path)
    base = Path(path).parent
    for where, graph in _graphs(model.graph, "graph"):
        seen: set[str] = set()
        for tensor in graph.initializer:
            name = str(tensor.name)
            if name and name in seen:
                raise FormatError(f"{path}: initializer {_show(name)} appears twice in {where} "
                                  f"(which one runs would be the file's accident)")
            seen.add(name)
            _check_tensor(onnx, tensor, f"initializer {_show(name)}", base, path)


def _show(name: str) -> str:
    text = visible(name, keep="")
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _graphs(graph: Any, where: str) -> Iterator[tuple[str, Any]]:
    """``graph`` and every sub-graph of its nodes' attributes (``If`` branches, ``Loop``
    bodies), depth first."""
    stack = [(where, graph)]
    while stack:
        label, g = stack.pop()
        yield label, g
        for node in g.node:
            for attr in node.attribute:
                subs = ([attr.g] if attr.HasField("g") else []) + list(attr.graphs)
                for k, sub in enumerate(subs):
                    stack.append((f"the {attr.name} sub-graph of node {_show(node.name)}"
                                  + (f" ({k})" if len(subs) > 1 else ""), sub))


def _check_opsets(onnx: Any, model: Any, path: Path) -> None:
    versions = {str(o.domain): int(o.version) for o in model.opset_import}
    default = versions.get("", versions.get("ai.onnx"))
    if default is None:
        raise FormatError(f"{path}: the model imports no opset of the default ONNX domain "
                          f"(opset_import: {sorted(versions) or 'empty'})")
    newest = int(onnx.defs.onnx_opset_version())
    if not 1 <= default <= newest:
        raise FormatError(f"{path}: ONNX opset {default} is not one this onnx knows (1 to "
                          f"{newest})")


def _check_tensor(onnx: Any, tensor: Any, what: str, base: Path, path: Path) -> None:
    type_name = onnx.TensorProto.DataType.Name(tensor.data_type) \
        if tensor.data_type in onnx.TensorProto.DataType.values() else str(tensor.data_type)
    if type_name in _NO_TENSOR_FORM or type_name.isdigit():
        raise FormatError(f"{path}: {what} has type {type_name}, which has no tensor form")
    dims = [int(d) for d in tensor.dims]
    if any(d < 0 for d in dims):
        raise FormatError(f"{path}: {what} has a negative dimension {dims}")
    elements = math.prod(dims)
    bits = _PACKED_BITS.get(type_name)
    if bits is None:
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
        nbytes = elements * itemsize
    else:
        itemsize, nbytes = 0, (elements * bits + 7) // 8
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        _check_external(tensor, what, nbytes, base, path)
        return
    if tensor.HasField("raw_data") or tensor.raw_data:
        if len(tensor.raw_data) != nbytes:
            raise FormatError(f"{path}: {what} declares {dims} ({nbytes} bytes of {type_name}) "
                              f"but its raw_data holds {len(tensor.raw_data)} bytes")
        return
    held = _typed_elements(tensor, type_name, bits)
    if held != elements:
        holds = "no data" if held == 0 else f"{held} elements"
        raise FormatError(f"{path}: {what} declares {dims} ({elements} elements of "
                          f"{type_name}) but holds {holds}")


def _typed_elements(tensor: Any, type_name: str, bits: int | None) -> int:
    """How many elements the typed fields hold (complex types: two floats each; packed 4-bit
    types: two per int32)."""
    for field in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
        count = len(getattr(tensor, field))
        if count:
            if type_name in ("COMPLEX64", "COMPLEX128"):
                return count // 2
            return count * (32 // bits) if bits else count
    return 0


def _check_external(tensor: Any, what: str, nbytes: int, base: Path, path: Path) -> None:
    info = {str(e.key): str(e.value) for e in tensor.external_data}
    location = info.get("location", "")
    where = f"{path}: {what}'s external data"
    if not location or "\x00" in location:
        raise FormatError(f"{where} has {'no' if not location else 'a NUL in its'} location")
    rel = Path(location)
    if rel.is_absolute() or location.startswith(("/", "\\")) or ".." in rel.parts:
        raise FormatError(f"{where} is at {_show(location)}, outside the model's folder "
                          f"(locations are relative to it, without '..')")
    target = base / rel
    try:
        real, root = Path(os.path.realpath(target)), Path(os.path.realpath(base))
        real.relative_to(root)
    except ValueError:
        raise FormatError(f"{where} {_show(location)} is a link out of the model's folder"
                          ) from None
    try:
        st = os.stat(real)
    except OSError as exc:
        raise FormatError(f"{where} {_show(location)} cannot be read "
                          f"({(exc.strerror or type(exc).__name__).lower()})") from None
    if not stat.S_ISREG(st.st_mode):
        raise FormatError(f"{where} {_show(location)} is not a regular file")
    offset, length = _number(info, "offset", where), _number(info, "length", where)
    if length is not None and length != nbytes:
        raise FormatError(f"{where} {_show(location)}: length {length} is not the tensor's "
                          f"{nbytes} bytes")
    start = offset or 0
    if start + nbytes > st.st_size:
        raise FormatError(f"{where} {_show(location)} holds {st.st_size} bytes; the tensor "
                          f"needs {nbytes} from offset {start}")


def _number(info: dict[str, str], key: str, where: str) -> int | None:
    if key not in info:
        return None
    text = info[key]
    if not text.isdigit():
        raise FormatError(f"{where}: {key} {_show(text)} is not a non-negative integer")
    return int(text)


__all__ = ["check_structure"]
