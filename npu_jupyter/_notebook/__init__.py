"""The notebook interface: ``%npu`` (``magics``, one parser per subcommand in ``subcommands``) and
``%%npu`` (``magics``; a cell's run is ``cell_run.CellRun``), the widget ``panel``, and the one shared
session config (``state.current_config``). Loading the extension imports neither TensorFlow nor
ipywidgets; those load with the first subcommand that needs them.
"""
