"""Every corpus model has a zoo entry (``entries.py``), so the zoo check can run the whole corpus."""

from __future__ import annotations

from corpus import entries, runner


def test_every_corpus_model_has_an_entry_named_after_it():
    assert sorted(entries.ENTRIES) == runner.module_names()
    for module_name, function in entries.ENTRIES.items():
        assert module_name == f"zoo_{function.__name__}"
