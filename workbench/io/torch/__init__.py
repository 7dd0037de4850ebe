"""The PyTorch importers' shared part: a traced ``nn.Module`` as a graph, and torch's names.

Flow (:func:`workbench.io.torch.fx.from_torch`): the module is traced (``torch.fx``, else
``torch.export``; :mod:`~workbench.io.torch.calls` says how it is called and what it returns);
each traced call gets its op kind and shape-cost rule from :mod:`~workbench.io.torch.costs`
(attention and the composite transformer modules: :mod:`~workbench.io.torch.attention_costs`)
and its attributes from :mod:`~workbench.io.torch.attrs` (the per-call conversions are the
kinds' own, ``OpKind.torch_attrs``, collected in :mod:`~workbench.io.torch.attr_rules`);
:mod:`~workbench.io.torch.program` keeps the traced calls runnable op by op for the torch
executor.  The execution-trace import (:mod:`workbench.io.traces`) reads torch's names through the
same rules.  ``torch`` is imported inside the functions that need it.
"""
