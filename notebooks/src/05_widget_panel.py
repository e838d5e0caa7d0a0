# %% [markdown]
# # 05 · The widget panel
#
# `npu_jupyter.panel()` is a panel of widgets for every Ascend session option, grouped in tabs (mixed
# computing, precision, dump, profiling, all other options). It edits **the same config object** as
# `%npu` and `%%npu`: a change made in the panel is what the next `%%npu` cell runs with, and a change
# made with `%npu set` or in code shows up in the panel at once.
#
# Under the tabs, the panel lists the problems of the current combination of options (live, as
# `%npu` would) and the equivalent Python code.
#
# This notebook needs no TensorFlow: the panel and the config are plain Python. (Widgets only render
# in a live notebook: in JupyterLab or Notebook 7 with ipywidgets installed. In a static view you will see
# a text placeholder instead.)

# %%
%load_ext npu_jupyter
import npu_jupyter

config = npu_jupyter.current_config()
config.reset()  # start from the adapter defaults
print("options set:", config.changed())

# %% [markdown]
# ## 1. Open the panel
#
# Set one option with the magic first, then open the panel: the Precision tab shows
# `precision_mode = allow_mix_precision`. Every drop-down's first entry is "(unset)" with the adapter's
# default: choosing it removes the option from the config.

# %%
%npu set precision_mode=allow_mix_precision

# %%
# NBVAL_IGNORE_OUTPUT
panel = npu_jupyter.panel()
panel

# %% [markdown]
# `panel.control(KEY)` is the widget of one option. Its value is what the panel shows:

# %%
print(panel.control("precision_mode").value)

# %% [markdown]
# ## 2. Code → panel
#
# `current_config()` is a traitlets object; assign an option as an attribute and the panel follows
# (look at the Mixed computing tab above after running this cell).

# %%
config.mix_compile_mode = True
print("panel shows:", panel.control("mix_compile_mode").value)

# %% [markdown]
# ## 3. Magic → panel
#
# The same with `%npu set` and `%npu unset`:

# %%
%npu set iterations_per_loop=1 op_debug_level=1

# %%
print("iterations_per_loop:", repr(panel.control("iterations_per_loop").value))
print("op_debug_level:", panel.control("op_debug_level").value)

# %%
%npu unset op_debug_level
print("op_debug_level:", panel.control("op_debug_level").value)

# %% [markdown]
# ## 4. Panel → config
#
# Choosing a value in the panel writes it to the config. Here we do in code what a click does: set the
# widget's value. Switch the data dump on in the Dump tab:

# %%
panel.control("enable_dump").value = "True"
print("config.enable_dump =", config.enable_dump)

# %% [markdown]
# The config now has a problem: the adapter refuses `enable_dump` without a `dump_path`. The panel's
# status line (under the tabs) shows it in red, and so does `%npu`; `config.problems()` lists it:

# %%
for problem in config.problems():
    print("problem:", problem)

# %% [markdown]
# A value the config refuses is not applied. It is shown next to the control, and the config keeps
# its previous value. Type a word into `iterations_per_loop` (a count):

# %%
panel.control("iterations_per_loop").value = "ten"
print("shown next to the control:", panel.error_text("iterations_per_loop"))
print("config.iterations_per_loop =", config.iterations_per_loop)

# %% [markdown]
# Give the dump a folder to fix the problem (text options are text boxes; an empty box means unset):

# %%
panel.control("dump_path").value = "/tmp"
print("problems:", config.problems())

# %% [markdown]
# ## 5. One config everywhere
#
# `%npu` shows what the panel shows, and `current_config()` is the very object both edit. `%npu panel`
# opens a second panel on it; both stay in sync.

# %%
%npu

# %%
print(npu_jupyter.current_config() is panel.config)
print(npu_jupyter.current_config().changed())

# %%
# NBVAL_IGNORE_OUTPUT
%npu panel

# %% [markdown]
# The "Equivalent code" section of the panel is the same text as `%npu code`:

# %%
%npu code

# %% [markdown]
# A `%%npu` cell would now run with exactly these options (plus its own flags). Reset when done; the
# panel shows every option unset again.

# %%
%npu reset
print("panel shows:", panel.control("precision_mode").value)
print("changed:", npu_jupyter.current_config().changed())

# %% [markdown]
# ## What to try next
#
# * Open the **Profiling** tab: it has a form for the `profiling_options` JSON (output folder, task
#   trace, training trace with its fp/bp points) that writes valid JSON for you.
# * Set `precision_mode` and `precision_mode_v2` together in the panel and read the problem it reports.
# * `npu_jupyter.panel(npu_jupyter.NpuConfig())` edits a separate config, e.g. one you pass to
#   `npu_jupyter.session(config)` yourself; `config.save(path)` / `%npu save PATH` keep it as JSON.
# * Back to **01_quickstart** to run a training cell with the options you chose here.
