"""The option model: the catalogue of every Ascend adapter session option, ``NpuConfig`` built from it,
its validation rules, and conversions to ConfigProto, NPURunConfig arguments and code.

Nothing here imports TensorFlow at import time; ``proto`` and ``codegen`` import its protobuf modules
when a proto is built or read.
"""
