"""The ONNX importer: a ``.onnx`` file read as a compiler sees it.

Flow (:func:`workbench.io.onnx.load.load_onnx`): :mod:`~workbench.io.onnx.proto` reads the
protobuf and turns nodes, value infos and scalar constants into plain values;
:mod:`~workbench.io.onnx.checks` refuses a malformed file before its weights are trusted;
:mod:`~workbench.io.onnx.simplify` optionally runs onnxscript's optimizer first;
:mod:`~workbench.io.onnx.shapes` gives every op a static shape (ONNX's shape inference with the
shape arithmetic evaluated); :mod:`~workbench.io.onnx.fold` decides which nodes compute only from
weights and :mod:`~workbench.io.onnx.weights` computes them; :mod:`~workbench.io.onnx.rules` maps
each op type to an op kind and its shape-cost rule, :mod:`~workbench.io.onnx.attrs` its attributes
to the op vocabulary; :mod:`~workbench.io.onnx.control` turns ``If``/``Loop``/``Scan`` bodies into
sub-graphs.  The ``onnx`` package is imported inside the functions that need it.
"""
