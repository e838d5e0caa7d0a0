"""Every document the code cites is in the repository (docs/contract.md and the pages it links).

Docstrings and comments explain a rule by pointing at where it is written down; a pointer to a file
outside the repository (a spec section, an untracked notes file) leaves a reader of a fresh clone with
nothing to open. So: no citation of the out-of-tree spec, every cited ``docs/`` or reference file
exists, and every section of docs/contract.md a citation names is a heading there.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "docs" / "contract.md"

#: where citations live: product code and data, tests, tools, benchmarks, the extension, the docs.
SCANNED = [
    *(ROOT / "npu_jupyter").rglob("*.py"),
    *(ROOT / "npu_jupyter").rglob("*.json"),
    *(ROOT / "tests").rglob("*.py"),
    *(ROOT / "tools").rglob("*.py"),
    *(ROOT / "bench").rglob("*.py"),
    *(ROOT / "labextension" / "src").rglob("*.ts*"),
    *(ROOT / "docs").glob("*.md"),
    ROOT / "README.md",
]

#: citations that point outside the repository (built here so this file does not match itself).
OUT_OF_TREE = [
    re.compile("SPEC" + r"\s*§"),
    re.compile("SPEC" + r"\.md"),
    re.compile(r"(?<![\w/.-])" + "ADAPTER-FACTS" + r"\s*§"),  # the notes without their in-repo path
    re.compile("/work/" + "shared"),
]

#: an in-repo document: a page of docs/ (flat), or a file of the reference data the tests ship. A path
#: such as docs/en/... names a page of the adapter's own repository, not ours.
CITED_PATH = re.compile(r"(?<![\w/.-])(docs/[\w.-]+\.md|tests/data/reference/[\w./-]*\w\.md)")


def _texts() -> list[tuple[str, str]]:
    """(repo-relative path, text) of every scanned file, this test excluded."""
    me = Path(__file__).resolve()
    return [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in SCANNED if p.resolve() != me]


def _contract_sections() -> list[str]:
    """The ``##`` headings of docs/contract.md, longest first (so "Dumps and profiles" beats a prefix)."""
    headings = re.findall(r"^## (.+?)\s*$", CONTRACT.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return sorted(headings, key=len, reverse=True)


def _named_sections(after: str, sections: list[str]) -> list[str] | None:
    """The contract sections a citation names right after the path ("..., Options, Plans and Notebook").

    ``[]`` when the citation names no section (prose such as "see docs/contract.md"); ``None`` when it
    starts a section list whose first name is not a heading.
    """
    rest = re.sub(r"\s+", " ", after)
    if not rest.startswith((", ", " (")):
        return []
    rest = rest[2:]
    named: list[str] = []
    while True:
        found = next((s for s in sections if rest.startswith(s)), None)
        if found is None:
            return named or None
        named.append(found)
        rest = rest[len(found) :]
        separator = next((sep for sep in (", ", " and ") if rest.startswith(sep)), None)
        if separator is None:
            return named
        rest = rest[len(separator) :]


def test_no_citation_points_outside_the_repository() -> None:
    found = [
        f"{path}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
        for path, text in _texts()
        for pattern in OUT_OF_TREE
        for m in pattern.finditer(text)
    ]
    assert found == [], "cite docs/contract.md or tests/data/reference/ADAPTER-FACTS.md instead"


def test_every_cited_document_exists() -> None:
    cited = {m.group(1) for _, text in _texts() for m in CITED_PATH.finditer(text)}
    assert "docs/contract.md" in cited  # the scan sees the citations this test is about
    missing = sorted(c for c in cited if not (ROOT / c).is_file())
    assert missing == []


def test_every_cited_contract_section_is_a_heading() -> None:
    sections = _contract_sections()
    bad = [
        f"{path}: {text[m.start() : m.end() + 40]!r}"
        for path, text in _texts()
        for m in re.finditer(r"docs/contract\.md", text)
        if _named_sections(text[m.end() : m.end() + 120], sections) is None
    ]
    assert bad == []


@pytest.mark.parametrize("name", ["Options", "Dumps and profiles", "Notebook"])
def test_the_section_parser_reads_the_citations_the_code_uses(name: str) -> None:
    sections = _contract_sections()
    assert _named_sections(f", {name}: more", sections) == [name]
    assert _named_sections(", Options, Plans and Notebook: one", sections) == ["Options", "Plans", "Notebook"]
    assert _named_sections(", Nowhere", sections) is None
    assert _named_sections(" says so", sections) == []


def test_the_contract_links_resolve() -> None:
    links = re.findall(r"\]\(([^)#]+)", CONTRACT.read_text(encoding="utf-8"))
    assert links
    missing = [link for link in links if not (CONTRACT.parent / link).resolve().is_file()]
    assert missing == []
