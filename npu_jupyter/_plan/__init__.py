"""The decision engine: graph + config + op tables in, placement/precision/partition out (no TF session).

The public entry is ``npu_jupyter.plan(graph, config, ...)`` (:func:`.planner.plan`). Modules, in
pipeline order (:mod:`.planner` runs them):

* :mod:`.graph` -- reading the graph into a light view (NodeDefs, OpDef recipes, topology, fetches, the
  per-graph dynamic-execution attributes);
* :mod:`.placement` (candidates and host propagation) with :mod:`.rewrites` (ops TF or the adapter
  rewrite before partitioning); :mod:`.tf2` instead for ``plan(..., adapter="tf2")`` (npu_device's
  NodePlacer);
* :mod:`.partition` (GeOps, transfers, cut-off findings) with :mod:`.clustering` (the algorithm);
* :mod:`.precision` with :mod:`.precision_files` (mixlist, customize_dtypes, op_precision_mode);
* :mod:`.settings` (the options read), :mod:`.approximate`, :mod:`.model` (the Plan records every later
  stage reads).
"""
