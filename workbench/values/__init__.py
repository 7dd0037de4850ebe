"""The graph values: Graph, Op and Tensor, the op catalogue (ops, its NumPy and torch references,
shape costs), control-flow checks, Schedule, happens-before clocks and Trace.

Values layer: may import the base modules (``workbench.errors``, ``workbench.registry``,
``workbench._checks`` ...) and ``workbench.control``'s op definitions, nothing above.
"""
