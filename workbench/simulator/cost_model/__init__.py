"""The cost model: device specs and their data files (``devices``), the GPU kernel model
(``kernel_model``), kernel launches (``launches``), op costs (``costs``), calibration and device
profiles.

Cost-model layer: may import the base modules and the graph values (``workbench.values``),
nothing above.
"""
