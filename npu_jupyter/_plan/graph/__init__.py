"""Reading a graph for the planner: :mod:`.view` (entry) builds a :mod:`.graph` view (the node types)
with :mod:`.node_reading` (NodeDefs), :mod:`.op_recipes` (per-type OpDef recipes), :mod:`.topology`
(ordering, pruning), :mod:`.fetches` (what a ``Session.run`` fetch structure names) and
:mod:`.graph_exec` (the per-graph dynamic-execution config in node attributes).
"""
