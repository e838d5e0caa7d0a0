"""TF1 on the emulator: the ``Session`` look-alike (:mod:`.emulator`), its private copy of the user's graph
(:mod:`.session_copy`), the per-run graphs it builds (:mod:`.run_graph`, :mod:`.observe_nodes`), the plans
it runs with (:mod:`.session_plans`, :mod:`.plan_input`, :mod:`.plan_cache`), the watched tensors and their liveness
(:mod:`.watch`, :mod:`.liveness`), the float32 reference of a step (:mod:`.reference`), variables carried
between private graphs (:mod:`.variables`), the reports of its runs (:mod:`.report_book`) and where a
script finds ``Session`` (:mod:`.session_names`).
"""
