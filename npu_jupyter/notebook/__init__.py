"""The notebook interface: ``%npu``/``%%npu`` (``magics``), the widget ``panel``, and the one shared
session config (``state.current_config``). Loading the extension imports neither TensorFlow nor
ipywidgets; those load with the first subcommand that needs them.
"""
