"""The eager function library helpers the function emulation uses (npu_jupyter/_runtime/functions/library.py)."""

from __future__ import annotations

from types import SimpleNamespace

from npu_jupyter._runtime.functions.library import call_tree, function_name, register


def _fn(name, *children):
    return SimpleNamespace(name=name, children=list(children))


def test_a_call_tree_holds_every_function_called_transitively_once():
    leaf = _fn(b"leaf")  # TensorFlow gives some names as bytes
    shared = _fn("shared", leaf)
    top = _fn("top", shared, _fn("other", shared, leaf))
    assert sorted(function_name(f) for f in call_tree(top)) == ["leaf", "other", "shared"]
    assert call_tree(leaf) == []


class _Context:
    def __init__(self):
        self.library = {"f": "old"}

    def has_function(self, name):
        return name in self.library

    def remove_function(self, name):
        del self.library[name]

    def add_function_def(self, definition):
        self.library[definition.signature.name] = definition


def test_register_replaces_a_definition_under_its_name_and_skips_without_a_context():
    context = _Context()
    definition = SimpleNamespace(signature=SimpleNamespace(name="f"))
    register(context, "f", definition)
    assert context.library == {"f": definition}
    register(None, "f", definition)  # no eager context (TensorFlow without one): nothing to do
