"""A real Session against a plain reference model, over random operation sequences.

Text nodes on real files (whole or a line range; re-read every turn or only when told the
file changed) and groups, under random add / remove / link / unlink / set_state /
mark_changed / file edits / tick / checkpoint / restore. After every step the session
must match the model (the invariants :mod:`dagctx.graph` states):

- **acyclic**: a link or group that would close a cycle raises and changes nothing;
- **ordered children** and **ordered roots** exactly as the model computes them;
- **monotonic versions**, and exactly the version steps the cascade promises: the changed
  node +1 and every group above it +1 **once per change** (diamonds included), once per
  tick for all the changes a tick applies together, and nothing else;
- **early cutoff**: a file rewritten with what a node already shows does not bump it;
- **restore reproduces the saved structure byte for byte in the projection**: when no
  content changed in between, the projection text after a restore equals the text when
  the checkpoint was taken, once the sections of the nodes created since are taken out
  (the layout by volatility places each of them in its band: a new group in the stable
  band, before the files edited earlier).

(``tests/test_graph.py`` runs a machine like this on a bare ContextGraph with probe nodes;
this one drives the Session with the real node types, files and ticks.)
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from robust_support import examples

from dagctx import CycleError, NodeState, Session, TickFrequency
from dagctx.nodes.text import TextNode

FILES = ["a.py", "b.py", "c.md"]
CONTENTS = [
    "a = 1\nb = 2\nc = 3\n",
    "a = 1\nb = 9\nc = 3\n",  # same size as the first; only line 2 differs
    "a = 1\nb = 2\nc = 3\nd = 4\n",
    "x\n",
    "",
    "no final newline",
]
RANGES = [None, (1, 1), (2, None), (2, 3)]
CHANGES_HEADER = "## Changes since last turn"


def shown(content: str, lines: tuple[int, int | None] | None) -> list[str]:
    """The lines a text node shows for ``content`` (the model's own reading)."""
    all_lines = content.splitlines()
    if lines is None:
        return all_lines
    start, end = lines
    return all_lines[start - 1 : end]


def stable_text(s: Session) -> str:
    """The projection without its volatile "changes since last turn" section."""
    return s.project().text.split(CHANGES_HEADER)[0]


def without_sections(s: Session, ids: list[str]) -> set[str]:
    """The stable text less the sections of the nodes ``ids``: each such section, as its
    node renders at the state the projection shows it, is taken out with the blank line
    that separates it from the next. Nodes that render alike (two collapsed ``a.py``) make
    it ambiguous which occurrence is whose, so every choice is returned (a few at most)."""
    p = s.project()
    texts = {p.text.split(CHANGES_HEADER)[0]}
    nodes = {n.id: n for n in s.nodes()}
    for section in p.sections:
        if section.node_id in ids:
            part = nodes[section.node_id].render(section.rendered_state)
            cut: set[str] = set()
            for text in texts:
                joined = next((j for j in (part + "\n\n", part + "\n", part) if j in text), None)
                assert joined is not None, (part, text)
                at = text.find(joined)
                while at >= 0:
                    cut.add(text[:at] + text[at + len(joined) :])
                    at = text.find(joined, at + 1)
            texts = cut
    return texts


class SessionModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="dagctx-model-"))
        self.files = {name: CONTENTS[0] for name in FILES}
        for name, content in self.files.items():
            (self.dir / name).write_text(content)
        self.mtime = 1_000_000_000 * 10**9  # every edit gets a later mtime, even on coarse clocks
        self.s = Session(self.dir, budget=1_000_000)
        self.children: dict[str, list[str]] = {}
        self.roots: list[str] = []
        self.kind: dict[str, str] = {}  # every node ever made: "text" or "group"
        self.order: list[str] = []  # the graph's node order: creation, restored ones last
        self.spec: dict[str, tuple[str, tuple[int, int | None] | None, bool]] = {}
        self.lines: dict[str, list[str]] = {}  # what each text node shows
        self.pending: set[str] = set()  # files edited (and announced) since the last tick
        self.versions: dict[str, int] = {}
        self.epoch = 0  # bumped by every tick that changed what some node shows
        self.saved: dict[str, tuple[dict[str, list[str]], list[str], dict[str, str], str, int]] = {}

    def teardown(self) -> None:
        self.s.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- the model's graph ------------------------------------------------------------

    def ids(self) -> list[str]:
        return list(self.children)

    def parents(self, nid: str) -> list[str]:
        return [p for p, kids in self.children.items() if nid in kids]

    def ancestors(self, nid: str) -> set[str]:
        found: set[str] = set()
        frontier = [nid]
        while frontier:
            upper = [p for n in frontier for p in self.parents(n) if p not in found]
            found.update(upper)
            frontier = upper
        return found

    def expected_steps(self, changes: list[str], batched: bool = False) -> dict[str, int]:
        """Version steps for ``changes``: +1 for each changed node, and +1 per change for
        every group above it (once for the whole batch when ``batched``)."""
        steps: dict[str, int] = {}
        above: set[str] = set()
        for nid in changes:
            steps[nid] = steps.get(nid, 0) + 1
            groups = {a for a in self.ancestors(nid) if self.kind[a] == "group"}
            if batched:
                above |= groups
            else:
                for a in groups:
                    steps[a] = steps.get(a, 0) + 1
        for a in above:
            steps[a] = steps.get(a, 0) + 1
        return steps

    def current_versions(self) -> dict[str, int]:
        return {n.id: n.version for n in self.s.nodes()}

    def check_steps(self, before: dict[str, int], steps: dict[str, int]) -> None:
        after = self.current_versions()
        for nid, version in after.items():
            assert version - before.get(nid, 0) == steps.get(nid, 0), (nid, before, after, steps)

    # -- rules ------------------------------------------------------------------------

    @rule(
        name=st.sampled_from(FILES),
        lines=st.sampled_from(RANGES),
        every_turn=st.booleans(),
    )
    def add_text(self, name: str, lines: tuple[int, int | None] | None, every_turn: bool) -> None:
        frequency = None if every_turn else TickFrequency.never()
        node = self.s.text(name, lines=lines, frequency=frequency)
        assert node.lines == shown(self.files[name], lines)
        self.children[node.id] = []
        self.roots.append(node.id)
        self.order.append(node.id)
        self.kind[node.id] = "text"
        self.spec[node.id] = (name, lines, every_turn)
        self.lines[node.id] = node.lines

    @rule(data=st.data())
    def add_group(self, data: st.DataObject) -> None:
        ids = self.ids()
        members = data.draw(st.lists(st.sampled_from(ids), max_size=3, unique=True)) if ids else []
        parent = data.draw(st.none() | st.sampled_from(ids)) if ids else None
        before = self.current_versions()
        if parent is not None and set(members) & ({parent} | self.ancestors(parent)):
            with pytest.raises(CycleError):
                self.s.group(*members, parent=parent)
            self.check_steps(before, {})
            return
        group = self.s.group(*members, title=f"g{len(self.kind)}", parent=parent)
        self.kind[group.id] = "group"
        self.order.append(group.id)
        self.children[group.id] = []
        if parent is None:
            self.roots.append(group.id)
        else:
            self.children[parent].append(group.id)
        for member in members:
            self.children[group.id].append(member)
            if member in self.roots:
                self.roots.remove(member)
        changes = ([parent] if parent is not None else []) + [group.id] * len(members)
        self.check_steps(before, self.expected_steps(changes))

    @precondition(lambda self: len(self.children) >= 2)
    @rule(data=st.data())
    def link(self, data: st.DataObject) -> None:
        p, c = data.draw(st.sampled_from(self.ids())), data.draw(st.sampled_from(self.ids()))
        index = data.draw(st.none() | st.integers(-3, 4))
        before = self.current_versions()
        if p == c or c in self.ancestors(p):
            with pytest.raises(CycleError):
                self.s.link(p, c, index=index)
            self.check_steps(before, {})
            return
        self.s.link(p, c, index=index)
        kids = self.children[p]
        if c in kids:  # an existing edge: a no-op
            self.check_steps(before, {})
            return
        n = len(kids)
        position = n if index is None else max(0, min(n, index if index >= 0 else n + index + 1))
        kids.insert(position, c)
        if c in self.roots:
            self.roots.remove(c)
        self.check_steps(before, self.expected_steps([p]))

    @precondition(lambda self: any(self.children.values()))
    @rule(data=st.data())
    def unlink(self, data: st.DataObject) -> None:
        p = data.draw(st.sampled_from([n for n, kids in self.children.items() if kids]))
        c = data.draw(st.sampled_from(self.children[p]))
        before = self.current_versions()
        self.s.unlink(p, c)
        self.children[p].remove(c)
        if not self.parents(c):
            self.roots.append(c)
        self.check_steps(before, self.expected_steps([p]))

    @precondition(lambda self: bool(self.children))
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        nid = data.draw(st.sampled_from(self.ids()))
        parents = self.parents(nid)
        orphans = [c for c in self.children[nid] if self.parents(c) == [nid]]
        before = self.current_versions()
        self.s.remove(nid)
        del self.children[nid]
        for kids in self.children.values():
            if nid in kids:
                kids.remove(nid)
        if nid in self.roots:
            self.roots.remove(nid)
        self.roots.extend(orphans)
        self.order.remove(nid)
        before.pop(nid)
        self.check_steps(before, self.expected_steps(parents))

    @precondition(lambda self: bool(self.children))
    @rule(data=st.data(), state=st.sampled_from(list(NodeState)))
    def set_state(self, data: st.DataObject, state: NodeState) -> None:
        node = self.s.get(data.draw(st.sampled_from(self.ids())))
        before = self.current_versions()
        changed = node.state != state
        node.set_state(state)
        self.check_steps(before, self.expected_steps([node.id] if changed else []))

    @precondition(lambda self: bool(self.children))
    @rule(data=st.data())
    def mark_changed(self, data: st.DataObject) -> None:
        nid = data.draw(st.sampled_from(self.ids()))
        before = self.current_versions()
        self.s.get(nid).mark_changed("poked")
        self.check_steps(before, self.expected_steps([nid]))
        # a change the projection shows (the changed files are laid out by their last
        # change), which a restore does not take back: the text saved before is not owed
        self.epoch += 1

    @rule(name=st.sampled_from(FILES), content=st.sampled_from(CONTENTS), announce=st.booleans())
    def edit_file(self, name: str, content: str, announce: bool) -> None:
        path = self.dir / name
        path.write_text(content)
        self.mtime += 10**7
        os.utime(path, ns=(self.mtime, self.mtime))
        self.files[name] = content
        if announce:
            self.s.file_changed(name)
            self.pending.add(name)

    @rule()
    def tick(self) -> None:
        changed = []
        for nid in self.ids():
            if self.kind[nid] != "text":
                continue
            name, lines, every_turn = self.spec[nid]
            if not every_turn and name not in self.pending:
                continue  # only told changes reach a node that is not re-read each turn
            now = shown(self.files[name], lines)
            if now != self.lines[nid]:
                changed.append(nid)
                self.lines[nid] = now
        self.pending.clear()
        before = self.current_versions()
        result = self.s.tick()
        assert sorted(result.recomputed) == sorted(changed)
        self.check_steps(before, self.expected_steps(changed, batched=True))
        if changed:
            self.epoch += 1

    @rule(name=st.sampled_from(["one", "two"]))
    def checkpoint(self, name: str) -> None:
        self.s.checkpoint(name)
        states = {n.id: n.state.name for n in self.s.nodes()}
        children = {k: list(self.children[k]) for k in self.order}
        self.saved[name] = (children, list(self.roots), states, stable_text(self.s), self.epoch)

    @precondition(lambda self: bool(self.saved))
    @rule(data=st.data())
    def restore(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.saved)))
        children, roots, states, text, epoch = self.saved[name]
        newer = [n for n in self.roots if n not in children]
        newer += [n for n in self.order if n not in children and n not in self.roots]
        assert self.s.restore(name) == newer
        self.order += [n for n in children if n not in self.order]  # removed ones come back
        self.children = {k: list(v) for k, v in children.items()}
        self.children.update({n: [] for n in newer})
        self.roots = list(roots) + newer
        assert {n.id: n.state.name for n in self.s.nodes() if n.id in states} == states
        if epoch == self.epoch:
            after = without_sections(self.s, newer)
            assert text in after, (text, after)

    # -- invariants -------------------------------------------------------------------

    @invariant()
    def structure_matches_the_model(self) -> None:
        g = self.s.graph
        assert [n.id for n in self.s.nodes()] == self.order
        assert set(self.order) == set(self.children)
        assert [n.id for n in g.roots()] == self.roots
        for nid, kids in self.children.items():
            assert [c.id for c in g.children(nid)] == kids
            assert (not g.parents(nid)) == (nid in self.roots)
        assert nx.is_directed_acyclic_graph(g._adj.digraph)

    @invariant()
    def text_nodes_show_what_the_model_says(self) -> None:
        for node in self.s.nodes():
            if isinstance(node, TextNode):
                assert node.lines == self.lines[node.id]

    @invariant()
    def versions_never_go_down(self) -> None:
        for nid, version in self.current_versions().items():
            assert version >= self.versions.get(nid, 0)
            self.versions[nid] = version


TestSessionModel = SessionModel.TestCase
TestSessionModel.settings = settings(
    max_examples=examples(100), stateful_step_count=40, deadline=None
)
