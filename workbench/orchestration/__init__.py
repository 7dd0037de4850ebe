"""Orchestration: ``compare`` (policies side by side), ``compare_measured``, ``sweep``,
``optimum``, ``pipelines`` and the HTML ``report``.

Orchestration layer: may import everything below it (values, simulator, executors, views through
``workbench.registry``), never the apps (``workbench.ui``, ``workbench.cli``); ``report`` is the
layer above ``compare``.
"""
