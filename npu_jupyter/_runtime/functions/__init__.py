"""TF2 on the emulator: every traced ``tf.function`` a cell runs, planned and run in the decided
precisions (:mod:`.emulator`): the call tree and names users know (:mod:`.tree`, :mod:`.labels`), the
rewritten function bodies (:mod:`.rewrite`), their observer nodes (:mod:`.observe_nodes`), and what a call
puts in its report (:mod:`.findings`, :mod:`.profile`, :mod:`.reference`).
"""
