"""MarkdownNode: parsing into nested sections, renders per state, incremental updates."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from dagctx import NodeState, PathError, Session, TickFrequency
from dagctx.graph import ContextGraph
from dagctx.nodes.base import Node
from dagctx.nodes.markdown import MarkdownNode, MarkdownSectionNode, parse_sections

DOC = """\
Intro paragraph.
Second intro line.

# Guide

Welcome to the guide.

## Install

    pip install thing

## Usage

Run it like this:

```
# not a heading, inside a fence
thing --go
```

### Advanced

Tune it.

Flags
-----

Setext heading body.
"""

STATES = (NodeState.COLLAPSED, NodeState.SUMMARY, NodeState.DETAILS, NodeState.ALL)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text(DOC)
    return tmp_path


@pytest.fixture
def s(root: Path) -> Iterator[Session]:
    with Session(root, budget=8000) as session:
        yield session


def edit(path: Path, old: str, new: str) -> None:
    """Replace text and make sure the mtime moves (coarse file system clocks)."""
    text = path.read_text()
    assert old in text
    before = path.stat().st_mtime_ns
    path.write_text(text.replace(old, new))
    if path.stat().st_mtime_ns == before:
        os.utime(path, ns=(before + 1_000_000, before + 1_000_000))


def by_heading(doc: MarkdownNode) -> dict[str, MarkdownSectionNode]:
    return {section.heading: section for section in doc.sections}


def tree(node: Node) -> list[object]:
    return [
        (c.heading, tree(c)) if tree(c) else c.heading
        for c in node.children
        if isinstance(c, MarkdownSectionNode)
    ]


class TestParsing:
    def test_sections_nest_by_level(self, s: Session) -> None:
        doc = s.markdown("docs/guide.md")
        assert tree(doc) == [("Guide", ["Install", ("Usage", ["Advanced"]), "Flags"])]
        assert doc.preamble == ["Intro paragraph.", "Second intro line."]
        assert doc.title == "Guide"

    def test_section_bodies_stop_at_the_next_heading(self, s: Session) -> None:
        sections = by_heading(s.markdown("docs/guide.md"))
        assert sections["Install"].body == ["    pip install thing"]
        assert sections["Usage"].body[0] == "Run it like this:"
        assert "# not a heading, inside a fence" in sections["Usage"].body
        assert sections["Advanced"].body == ["Tune it."]
        assert (sections["Flags"].level, sections["Flags"].body) == (2, ["Setext heading body."])

    def test_headings_in_quotes_and_lists_do_not_start_sections(self) -> None:
        preamble, sections = parse_sections(["> # quoted", "", "- # listed", "", "## Real", "x"])
        assert preamble == ["> # quoted", "", "- # listed"]
        assert [s.heading for s in sections] == ["Real"]

    def test_repeated_headings_get_distinct_keys(self) -> None:
        _, sections = parse_sections(["## Notes", "a", "## Notes", "b"])
        assert [s.key for s in sections] == [(("Notes", 0),), (("Notes", 1),)]

    def test_title_falls_back_to_the_first_heading_then_the_file_name(self, root: Path) -> None:
        (root / "plain.md").write_text("just text\n")
        (root / "h2.md").write_text("## Only level two\n")
        with Session(root) as session:
            assert session.markdown("plain.md").title == "plain.md"
            assert session.markdown("h2.md").title == "Only level two"


class TestRenders:
    def test_document_states(self, s: Session) -> None:
        doc = s.markdown("docs/guide.md")
        collapsed, summary, details, full = (doc.render(state) for state in STATES)
        assert collapsed == f"- docs/guide.md: Guide (markdown, 5 sections) (#{doc.id})"
        assert summary.splitlines() == [
            f"### docs/guide.md (#{doc.id}): Guide",
            "outline:",
            "- Guide",
            "  - Install",
            "  - Usage",
            "    - Advanced",
            "  - Flags",
        ]
        assert details.splitlines() == [
            f"### docs/guide.md (#{doc.id}): Guide",
            "```markdown",  # the preamble is fenced (issue 14 item 12)
            "Intro paragraph.",
            "Second intro line.",
            "```",
        ]
        assert "outline:" in full and full.endswith("Second intro line.\n```")

    def test_section_states(self, s: Session) -> None:
        usage = by_heading(s.markdown("docs/guide.md"))["Usage"]
        collapsed, summary, details, full = (usage.render(state) for state in STATES)
        assert collapsed == f"- ## Usage (6 lines) (#{usage.id})"
        assert summary.splitlines() == [
            f"## Usage (#{usage.id})",
            "```markdown",  # the first lines are fenced (issue 14 item 12)
            "Run it like this:",
            "```",
            "[… 5 more lines]",
            "- ### Advanced",
        ]
        assert details.splitlines()[0] == f"## Usage (#{usage.id})"
        assert "thing --go" in details and "Tune it." not in details
        assert full.splitlines()[0] == "[docs/guide.md › Guide › Usage]"
        assert full.splitlines()[1:] == details.splitlines()

    def test_projection_shows_preamble_then_sections_in_order(self, s: Session) -> None:
        s.markdown("docs/guide.md")
        text = s.tick().projection.text
        order = ["Intro paragraph.", "# Guide (#", "## Install (#", "## Usage (#", "### Advanced"]
        positions = [text.index(part) for part in order]
        assert positions == sorted(positions)

    def test_a_long_section_is_cut_to_fit_the_budget(self, root: Path) -> None:
        body = "\n".join(f"line {i} of a long section with some words" for i in range(400))
        (root / "long.md").write_text(f"# Long\n\n{body}\n")
        with Session(root, budget=600) as session:
            session.markdown("long.md")
            projection = session.tick().projection
        assert projection.tokens <= 600
        assert "more lines of this section cut to fit the budget]" in projection.text


class TestIncrementalUpdates:
    def test_editing_one_section_bumps_only_that_section(self, s: Session, root: Path) -> None:
        doc = s.markdown("docs/guide.md")
        s.tick()
        before = {h: n.version for h, n in by_heading(doc).items()}
        doc_version = doc.version
        edit(root / "docs/guide.md", "Tune it.", "Tune it carefully.\nAnd test.")
        result = s.tick()
        after = {h: n.version for h, n in by_heading(doc).items()}
        assert after == {**before, "Advanced": before["Advanced"] + 1}
        assert doc.version == doc_version
        assert by_heading(doc)["Advanced"].body == ["Tune it carefully.", "And test."]
        assert [(c.node_id, c.description) for c in result.changes] == [
            (by_heading(doc)["Advanced"].id, "section 'Advanced': text changed")
        ]

    def test_added_section_becomes_a_child_with_a_trace(self, s: Session, root: Path) -> None:
        doc = s.markdown("docs/guide.md")
        s.tick()
        before = {h: n.version for h, n in by_heading(doc).items()}
        edit(root / "docs/guide.md", "## Usage", "## Configure\n\nSet it up.\n\n## Usage")
        changes = s.tick().changes
        assert tree(doc) == [("Guide", ["Install", "Configure", ("Usage", ["Advanced"]), "Flags"])]
        configure = by_heading(doc)["Configure"]
        assert configure.body == ["Set it up."]
        descriptions = {(c.node_id, c.description) for c in changes}
        assert (doc.id, "sections added 'Configure'") in descriptions
        assert (by_heading(doc)["Guide"].id, f"linked child {configure.id}") in descriptions
        unchanged = ["Install", "Usage", "Advanced", "Flags"]
        assert all(by_heading(doc)[h].version == before[h] for h in unchanged)

    def test_removed_section_leaves_the_graph(self, s: Session, root: Path) -> None:
        doc = s.markdown("docs/guide.md")
        s.tick()
        install = by_heading(doc)["Install"]
        edit(root / "docs/guide.md", "## Install\n\n    pip install thing\n\n", "")
        changes = s.tick().changes
        assert install.graph is None and "Install" not in by_heading(doc)
        assert (doc.id, "sections removed 'Install'") in {
            (c.node_id, c.description) for c in changes
        }
        assert not any(n is install for n in s.nodes())

    def test_renamed_parent_replaces_its_subtree(self, s: Session, root: Path) -> None:
        doc = s.markdown("docs/guide.md")
        old = by_heading(doc)
        edit(root / "docs/guide.md", "## Usage", "## Running")
        s.tick()
        new = by_heading(doc)
        assert tree(doc) == [("Guide", ["Install", ("Running", ["Advanced"]), "Flags"])]
        assert new["Advanced"] is not old["Advanced"] and old["Advanced"].graph is None
        assert new["Install"] is old["Install"]

    def test_reordered_sections_follow_the_document(self, s: Session, root: Path) -> None:
        (root / "two.md").write_text("## A\n\na\n\n## B\n\nb\n")
        doc = s.markdown("two.md")
        a, b = doc.children
        edit(root / "two.md", "## A\n\na\n\n## B\n\nb\n", "## B\n\nb\n\n## A\n\na\n")
        s.tick()
        assert doc.children == [b, a]
        assert (a.version, b.version) == (0, 0)

    def test_untouched_file_changes_nothing(self, s: Session) -> None:
        doc = s.markdown("docs/guide.md")
        s.tick()
        versions = [n.version for n in (doc, *doc.sections)]
        result = s.tick()
        assert result.changes == [] and result.recomputed == []
        assert [n.version for n in (doc, *doc.sections)] == versions

    def test_file_changed_reaches_a_node_that_is_not_polled(self, s: Session, root: Path) -> None:
        doc = s.markdown("docs/guide.md", frequency=TickFrequency.never())
        edit(root / "docs/guide.md", "Welcome to the guide.", "Welcome back.")
        s.tick()
        assert by_heading(doc)["Guide"].body == ["Welcome to the guide."]
        s.file_changed("docs/guide.md")
        result = s.tick()
        assert by_heading(doc)["Guide"].body == ["Welcome back."]
        assert doc.id in result.recomputed

    def test_preamble_edit_bumps_the_document_only(self, s: Session, root: Path) -> None:
        doc = s.markdown("docs/guide.md")
        s.tick()
        versions = {h: n.version for h, n in by_heading(doc).items()}
        edit(root / "docs/guide.md", "Second intro line.", "A new second line.")
        changes = s.tick().changes
        assert [c.node_id for c in changes] == [doc.id]
        assert doc.preamble[-1] == "A new second line."
        assert {h: n.version for h, n in by_heading(doc).items()} == versions

    def test_deleted_file_shows_a_placeholder_and_drops_sections(
        self, s: Session, root: Path
    ) -> None:
        doc = s.markdown("docs/guide.md")
        (root / "docs/guide.md").unlink()
        changes = s.tick().changes
        assert doc.sections == [] and doc.children == []
        assert doc.render(NodeState.DETAILS).endswith("[file deleted]")
        assert (doc.id, "file deleted") in {(c.node_id, c.description) for c in changes}


class TestSessionVerb:
    @pytest.mark.parametrize("path", ["../outside.md", "missing.md", "docs"])
    def test_bad_paths_are_refused(self, s: Session, root: Path, path: str) -> None:
        (root.parent / "outside.md").write_text("# Out\n")
        with pytest.raises(PathError, match=repr(path).strip("'")):
            s.markdown(path)
        assert len(s.graph) == 0

    def test_parent_and_state(self, s: Session) -> None:
        group = s.group(title="docs", state="DETAILS")
        doc = s.markdown("docs/guide.md", parent=group, state="SUMMARY", priority=90)
        assert doc.parents == [group] and doc.state == NodeState.SUMMARY and doc.priority == 90
        text = s.tick().projection.text
        assert "outline:" in text and "Welcome to the guide." not in text


class TestRoundTrip:
    def test_nodes_round_trip_and_reattach_by_key(self, s: Session) -> None:
        doc = s.markdown("docs/guide.md")
        s.tick()
        graph = ContextGraph()
        copy = Node.from_dict(doc.to_dict())
        assert isinstance(copy, MarkdownNode)
        graph.add(copy)
        copies: dict[str, Node] = {}
        for section in doc.sections:
            restored = Node.from_dict(section.to_dict())
            assert isinstance(restored, MarkdownSectionNode)
            assert restored.to_dict() == section.to_dict()
            graph.add(restored)
            copies[section.id] = restored
        for section in doc.sections:
            parent = section.parents[0]
            graph.link(copies.get(parent.id, copy), copies[section.id])
        versions = {n.id: n.version for n in graph}
        assert copy.recompute() is False  # first sync matches every section by its key
        assert {n.id: n.version for n in graph} == versions and len(graph) == len(versions)
        for original in (doc, *doc.sections):
            for state in STATES:
                assert graph.get(original.id).render(state) == original.render(state)
