"""What a session step and a function call share once they ran: the one record of a step or call
(:mod:`.step_record`) and the observers that read it (:mod:`.observers`: dump, overflow, drift, profile,
non-finite finding), the by-design rule (:mod:`.by_design`), the data dump (:mod:`.dump`: its folder
format, byte budget, writer and reader), profiling (:mod:`.profile`), the accuracy comparison
(:mod:`.compare`), the run-time settings and notes (:mod:`.run_settings`, :mod:`.run_notes`), initialiser
runs (:mod:`.initializers`), fetch structures (:mod:`.fetch_map`) and NodeDef building (:mod:`.node_defs`).
Nothing here imports :mod:`..session` or :mod:`..functions` (``tests/test_layers.py``).
"""
