"""Running graphs, one sub-package per pipeline and one for what both share.

* :mod:`.session` -- TF1: the emulator's ``Session``, its per-run graphs, init/iterator runs, the float32
  reference and the run's report book;
* :mod:`.functions` -- TF2: traced ``tf.function`` calls emulated: call tree, rewritten bodies, findings,
  profile and drift of each call;
* :mod:`.observe` -- what both stacks share: the step record, timing, non-finite finding, the by-design
  rule, dump writer/reader/format, profile, compare (drift), the run settings and notes;
* :mod:`.ascend` -- the real adapter backend, its output folders and the GE graph-dump reader;
* :mod:`.report` (``RunReport``) and :mod:`.rewrite` (storage rounding, applied by both stacks) below
  them all, :mod:`.backends` (``npu_jupyter.session``) above them all.

``tests/test_layers.py`` enforces that order: ``observe`` imports neither stack, the stacks do not
import each other.
"""
