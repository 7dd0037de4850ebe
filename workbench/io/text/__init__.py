"""The workbench's own text formats: graph JSON and DOT (Graphviz), each read and written.

Flow: :mod:`~workbench.io.text.json_format` reads and writes the graph JSON format
(docs/graph-format.md); the DOT reader :mod:`~workbench.io.text.dot` takes plain DOT a statement
at a time (:mod:`~workbench.io.text.dot_statements`) and anything else through its tokenizer
(:mod:`~workbench.io.text.dot_tokens`) and parser, accepting the attributes
:mod:`~workbench.io.text.dot_attrs` declares; :mod:`~workbench.io.text.dot_write` writes the full
form that reads back into an equal graph.
"""
