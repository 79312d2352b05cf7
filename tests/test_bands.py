"""The volatility layout (SPEC §4 guarantee 6, dagctx/projection/bands.py): the workspace
first, then the conversation, then volatile nodes; editing one file leaves the text before
it byte-identical, a new message the whole workspace; the incremental text equals a fresh
render of the same graph."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagctx import Session
from dagctx.nodes.base import Trace
from dagctx.nodes.message import MessageNode
from dagctx.projection import Projection, SectionCache, build_projection
from dagctx.projection.allocation import FILL_GRAINS
from dagctx.projection.bands import (
    CHANGED,
    CONVERSATION,
    HELD_STEPS,
    SETTLE,
    STABLE,
    TALK_STEPS,
    VOLATILE,
    band_of,
    last_chunk,
    settled,
    workspace_room,
)
from dagctx.projection.messages import breakpoints
from dagctx.projection.projector import Projector
from dagctx.watch.scan import scan_tree


def write(root: Path, name: str, body: str) -> None:
    (root / name).write_text(body)


def order(p: Projection) -> list[str]:
    return [s.node_id for s in p.sections]


def fresh(s: Session, budget: int, changes: list[Trace]) -> Projection:
    """The graph rendered by a new projector (no incremental state)."""
    return build_projection(s.graph, SectionCache(s.counter), budget, changes=changes)


class TestLayout:
    def test_the_conversation_comes_after_the_workspace(self, tmp_path: Path) -> None:
        for i in range(3):
            write(tmp_path, f"f{i}.py", f"def f{i}():\n    return {i}\n")
        with Session(tmp_path, budget=50_000) as s:
            topic = s.topic("work")  # first in walk order
            first = s.message("user", "hello")
            files = [s.text(f"f{i}.py") for i in range(3)]
            meta = s.session_node()
            p = s.tick().projection
            assert order(p) == [*(f.id for f in files), topic.id, first.id, meta.id]
            assert band_of(topic) == band_of(first) == CONVERSATION
            assert band_of(files[0]) == STABLE and band_of(meta) == VOLATILE

    def test_editing_a_file_keeps_the_text_before_its_band(self, tmp_path: Path) -> None:
        for i in range(6):
            write(tmp_path, f"f{i}.py", f"def f{i}():\n    return {i}\n")
        with Session(tmp_path, budget=50_000) as s:
            s.topic("work")
            files = [s.text(f"f{i}.py") for i in range(6)]
            s.message("user", "fix f2 please")
            before = s.tick().projection
            for k in range(3):
                write(tmp_path, "f2.py", f"v = {k}\n")
                s.message("assistant", f"edited f2 ({k})")
                after = s.tick().projection
                start = after.text.index(f"(#{files[2].id})")
                start = after.text.rindex("###", 0, start)
                place = order(after).index(files[2].id)
                if k == 0:  # its first change moves it to the changed band, after f5:
                    # the text before the place it left stays
                    assert order(after)[:6] == [files[i].id for i in (0, 1, 3, 4, 5, 2)]
                    left = before.text.rindex("###", 0, before.text.index(f"(#{files[2].id})"))
                    assert before.text[:left] == after.text[:left]
                    assert after.stable_prefix_tokens == sum(x.tokens for x in after.sections[:2])
                else:  # and stays there: the text before it stays
                    assert place == 5 and band_of(files[2]) == CHANGED
                    assert before.text[:start] == after.text[:start]
                    assert after.stable_prefix_tokens == sum(
                        x.tokens for x in after.sections[:place]
                    )
                assert after.prefix_break == f"#{files[2].id} ({files[2].label()})"
                before = after

    def test_a_changed_file_moves_once_and_stays(self, tmp_path: Path) -> None:
        for i in range(4):
            write(tmp_path, f"f{i}.py", f"def f{i}():\n    return {i}\n")
        with Session(tmp_path, budget=50_000) as s:
            files = [s.text(f"f{i}.py") for i in range(4)]
            s.topic("work")
            s.checkpoint("before")
            s.tick()
            write(tmp_path, "f1.py", "v = 1\n")
            moved = order(s.tick().projection)[:4]
            assert moved == [files[i].id for i in (0, 2, 3, 1)]
            for turn in range(3):  # no more changes: it stays where it went
                s.message("user", f"turn {turn}")
                assert order(s.tick().projection)[:4] == moved
            s.restore("before")  # restores structure and states, not content: it stays
            assert band_of(files[1]) == CHANGED
            assert order(s.tick().projection)[:4] == moved
            with Session.load(s.save()) as loaded:  # saved with the node
                assert band_of(loaded.graph.get(files[1].id)) == CHANGED
                assert band_of(loaded.graph.get(files[0].id)) == STABLE

    def test_the_changed_band_is_in_the_order_of_the_last_change(self, tmp_path: Path) -> None:
        # an agent editing f0 again and again rewrites f0 and what follows it, not f3
        for i in range(4):
            write(tmp_path, f"f{i}.py", f"def f{i}():\n    return {i}\n")
        with Session(tmp_path, budget=50_000) as s:
            files = [s.text(f"f{i}.py") for i in range(4)]
            s.tick()
            for i in (3, 0):
                write(tmp_path, f"f{i}.py", f"v = {i}\n")
                s.tick()
            write(tmp_path, "f3.py", "v = 33\n")
            before = s.tick().projection  # f3 changed last
            assert order(before)[:4] == [files[i].id for i in (1, 2, 0, 3)]
            for k in range(3):
                write(tmp_path, "f0.py", f"v = {k}\n" * (k + 2))
                r = s.tick()
                after = r.projection
                assert after.text == fresh(s, 50_000, r.changes).text
                assert order(after)[:4] == [files[i].id for i in (1, 2, 3, 0)]
                if k == 0:  # f0 moved after f3: the text before the place it left stays
                    f0 = before.text.index(f"### f0.py (#{files[0].id})")
                    assert after.text[:f0] == before.text[:f0]
                else:  # and stays at the end: the text before it, f3 included, stays
                    f0 = after.text.index(f"### f0.py (#{files[0].id})")
                    f3 = after.text.index(f"### f3.py (#{files[3].id})")
                    assert f3 < f0 and after.text[:f0] == before.text[:f0]
                before = after

    def test_a_new_message_keeps_the_whole_workspace_cached(self, tmp_path: Path) -> None:
        for i in range(3):
            write(tmp_path, f"f{i}.py", f"def f{i}():\n    return {i}\n")
        with Session(tmp_path, budget=50_000) as s:
            topic = s.topic("work")
            files = [s.text(f"f{i}.py") for i in range(3)]
            s.message("user", "hello")
            s.tick()
            s.message("assistant", "hi")
            p = s.tick().projection
            workspace = sum(x.tokens for x in p.sections if x.node_id in {f.id for f in files})
            assert p.stable_prefix_tokens >= workspace
            content = p.to_messages(provider="anthropic")["messages"][0]["content"]
            assert content[0]["text"].startswith(f"### f0.py (#{files[0].id})")
            assert content[1]["text"].startswith(f"## Topic: work (#{topic.id}, active)")
            assert "cache_control" in content[0]


class TestSettledConversation:
    """The conversation's older sections settle, in chunks, before the changed files
    (bands.settled), so an edit rewrites only the recent messages after them."""

    def test_an_edit_keeps_the_settled_messages_before_the_changed_files(
        self, tmp_path: Path
    ) -> None:
        for i in range(3):
            write(tmp_path, f"f{i}.py", f"def f{i}():\n    return {i}\n")
        with Session(tmp_path, budget=50_000) as s:
            files = [s.text(f"f{i}.py") for i in range(3)]
            topic = s.topic("work")
            said = [s.message("user" if k % 2 else "assistant", f"turn {k}") for k in range(40)]
            write(tmp_path, "f1.py", "v = 1\n")
            before = s.tick().projection
            # 41 conversation sections: the first 16 (the topic and 15 messages) settle
            assert order(before) == [
                files[0].id, files[2].id, topic.id, *(m.id for m in said[:15]),
                files[1].id, *(m.id for m in said[15:]),
            ]  # fmt: skip
            for k in range(2):
                write(tmp_path, "f1.py", f"v = {k + 2}\n")
                r = s.tick()
                after = r.projection
                assert after.text == fresh(s, 50_000, r.changes).text
                cut = after.text.index(f"### f1.py (#{files[1].id})")
                assert after.text[:cut] == before.text[:cut]
                assert f"turn {14}" in after.text[:cut] and f"turn {15}" not in after.text[:cut]
                before = after
            content = after.to_messages(provider="anthropic")["messages"][0]["content"]
            marked = [k for k, block in enumerate(content) if "cache_control" in block]
            ends, offset = [], 0
            for block in content:
                offset += len(block["text"])
                ends.append(offset)
            # the settled band's end, the changed band's, the conversation's and the last
            assert [ends[k] for k in marked] == [*after.band_ends[1:4], len(after.text)]

    def test_a_tool_call_and_its_result_settle_together(self, tmp_path: Path) -> None:
        write(tmp_path, "a.py", "x = 1\n")
        with Session(tmp_path, budget=50_000) as s:
            s.text("a.py")
            s.topic("work")
            for k in range(14):  # the topic and 14 messages: the call is the 16th section
                s.message("assistant", f"step {k}")
            s.message("tool_call", '{"cmd": "ls"}', tool_call_id="c1", name="shell")
            s.message("tool_result", "a.py", tool_call_id="c1", name="shell")
            for k in range(20):
                s.message("user", f"more {k}")
            p = s.tick().projection
            text = p.text
            call, result = text.index('{"cmd": "ls"}'), text.index("a.py", text.index("c1"))
            assert call < result
            assert "more 0" in text[result:]  # nothing between the call and its result
            assert text.index("step 13") < p.band_ends[1] < call  # settled before the call

    @given(st.lists(st.sampled_from(["user", "assistant", "tool_call", "tool_result"])))
    def test_the_settled_part_keeps_pairs_and_only_grows(self, roles: list[str]) -> None:
        talk = [
            MessageNode(role, "x", tool_call_id="c" if role.startswith("tool") else None)
            for role in roles
        ]
        last = 0
        for n in range(len(talk) + 1):
            cut = settled(talk[:n])
            assert 0 <= cut <= max(0, n - SETTLE) and cut >= last
            if 0 < cut < n:
                assert talk[cut - 1].role != "tool_call" and talk[cut].role != "tool_result"
            last = cut

    def test_the_settled_band_is_two_blocks_and_keeps_its_last_end(self, tmp_path: Path) -> None:
        # A breakpoint reads only 20 blocks back: the settled band is its older part and
        # its last chunk, so the look back from its end reaches the workspace, and the
        # end it had before that chunk settled is still a block boundary
        write(tmp_path, "a.py", "x = 1\n")
        with Session(tmp_path, budget=50_000) as s:
            s.text("a.py")
            s.topic("work")
            for k in range(50):
                s.message("user" if k % 2 else "assistant", f"turn {k}")
            before = s.tick().projection  # 51 sections: 32 settled, in chunks of 16
            for k in range(16):
                s.message("assistant", f"more {k}")
            after = s.tick().projection  # 67: 48 settled
        for p, settled_count in ((before, 32), (after, 48)):
            start, end = p.band_ends[0], p.band_ends[1]
            inside = [e for e in p.block_ends if start < e < end]
            assert len(inside) == 1  # one block end inside: the settled band is two blocks
            assert p.text[start:end].count("(#") == settled_count  # the topic and messages
            assert p.text[start : inside[0]].count("(#") == settled_count - SETTLE
        assert before.band_ends[1] in after.block_ends
        assert after.text[: before.band_ends[1]] == before.text[: before.band_ends[1]]

    @given(st.lists(st.sampled_from(["user", "assistant", "tool_call", "tool_result"])))
    def test_the_last_chunk_starts_where_the_settled_part_ended(self, roles: list[str]) -> None:
        talk = [
            MessageNode(role, "x", tool_call_id="c" if role.startswith("tool") else None)
            for role in roles
        ]
        cut = last_chunk(talk)
        assert cut == settled(talk[: max(0, len(talk) - SETTLE)]) and cut <= settled(talk)

    def test_breakpoints_go_to_the_last_band_ends(self) -> None:
        assert breakpoints(6, [0, 1, 2, 4, 5]) == {1, 2, 4, 5}
        assert breakpoints(4, [0, 3]) == {0, 3}


class TestProperties:
    @settings(
        max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        n=st.integers(1, 6),
        edits=st.lists(st.integers(0, 5), max_size=8),
        budget=st.integers(50, 4000),
    )
    def test_incremental_text_equals_a_fresh_render_within_the_budget(
        self, tmp_path: Path, n: int, edits: list[int], budget: int
    ) -> None:
        root = Path(tempfile.mkdtemp(dir=tmp_path))
        for i in range(n):
            write(root, f"f{i}.py", "".join(f"def g{j}():\n    return {j}\n" for j in range(i * 5)))
        with Session(root, budget=budget) as s:
            for i in range(n):
                s.text(f"f{i}.py")
            s.topic("t")
            s.message("user", "go")
            s.tick()
            for turn, k in enumerate(edits):
                write(root, f"f{k % n}.py", f"changed = {turn}\n" * (turn + 1))
                r = s.tick()
                p = r.projection
                assert p.tokens <= budget
                assert p.text == fresh(s, budget, r.changes).text


class TestReservation:
    """Under pressure the later bands' growth is reserved in steps, so the workspace's
    allocation does not move with every message (bands.workspace_room)."""

    def test_new_messages_under_pressure_leave_the_workspace_unchanged(
        self, tmp_path: Path
    ) -> None:
        for i in range(30):
            body = "".join(f"def f{i}_{j}(x):\n    return x + {j}\n" for j in range(30))
            write(tmp_path, f"m{i:02}.py", body)
        with Session(tmp_path, budget=4000) as s:
            for i in range(30):
                s.text(f"m{i:02}.py")
            s.topic("work")
            s.message("user", "go")
            first = s.tick().projection
            assert first.omitted or first.degraded  # the budget binds
            workspace = first.text[: first.band_ends[0]]
            kept = 0
            for turn in range(12):
                s.message("assistant", f"turn {turn}: working on it")
                p = s.tick().projection
                assert p.tokens <= 4000
                kept += p.text[: p.band_ends[0]] == workspace
                workspace = p.text[: p.band_ends[0]]
            # the messages grow by about 15 tokens a turn: the reservation's step (125)
            # is crossed at most twice
            assert kept >= 10

    def test_tool_output_every_turn_leaves_the_workspace_on_most_turns(
        self, tmp_path: Path
    ) -> None:
        # An agent's conversation grows by its tool output every turn (here about 90
        # tokens, 1/40 of the budget): the reservation's step (a sixteenth, 250 tokens)
        # is crossed every third turn or so, not nearly every turn
        for i in range(30):
            body = "".join(f"def f{i}_{j}(x):\n    return x + {j}\n" for j in range(30))
            write(tmp_path, f"m{i:02}.py", body)
        with Session(tmp_path, budget=4000) as s:
            for i in range(30):
                s.text(f"m{i:02}.py")
            s.topic("work")
            s.message("user", "go")
            first = s.tick().projection
            workspace = first.text[: first.band_ends[0]]
            kept = 0
            for turn in range(10):
                s.message("assistant", "\n".join(f"test_{turn}_{k} PASSED" for k in range(10)))
                p = s.tick().projection
                assert p.tokens <= 4000
                kept += p.text[: p.band_ends[0]] == workspace
                workspace = p.text[: p.band_ends[0]]
            assert kept >= 6  # steps of 1/32 of the budget kept it on 3 turns of 10

    @given(
        budget=st.integers(0, 200_000),
        changes=st.integers(0, 5_000),
        held=st.integers(0, 50_000),
        more=st.integers(0, 100),
    )
    def test_with_a_conversation_the_room_moves_in_steps_of_a_sixteenth(
        self, budget: int, changes: int, held: int, more: int
    ) -> None:
        room = workspace_room(budget, changes, held, TALK_STEPS)
        step = max(1, budget // TALK_STEPS)
        assert room <= max(0, budget - changes)
        assert room >= budget - changes - step + 1 or room == 0
        grown = workspace_room(budget, changes, held + more, TALK_STEPS)
        if (changes + held + more - 1) // step == (changes + held - 1) // step:
            assert grown - (held + more) == room - held or grown == 0 or room == 0

    def test_the_fill_takes_what_is_left_in_whole_grains(self, tmp_path: Path) -> None:
        """A room that moves by less than a grain (as an edit of a later band's file shown
        cut moves it, by a few tokens) changes the fill's decisions at most once: the cut
        of a file of one-token lines would otherwise follow every token."""
        write(tmp_path, "restore.txt", "restore\n" + "x\n" * 6000)
        for i in range(10):
            write(
                tmp_path,
                f"m{i}.py",
                "".join(f"def h{i}_{j}(x):\n    return x\n" for j in range(15)),
            )
        for budget in (2000, 4000, 8000):
            with Session(tmp_path, budget=budget) as s:
                scan_tree(s, ".")
                s.focus("restore")
                s.tick()
                projector = s.cache.projector
                assert isinstance(projector, Projector)
                alloc = projector._plans[budget].alloc
                seen = set()
                for more in range((budget - 200) // FILL_GRAINS):
                    alloc.undo_turn()
                    alloc.decide(budget - 200 + more, 50)
                    cuts = sorted((i, cut[2]) for i, cut in alloc.cut.items())
                    seen.add((bytes(alloc.cur), tuple(cuts)))
                assert len(seen) <= 2

    @given(
        budget=st.integers(0, 200_000),
        changes=st.integers(0, 5_000),
        held=st.integers(0, 50_000),
        more=st.integers(0, 100),
    )
    def test_the_workspace_room_is_within_a_step_and_moves_in_steps(
        self, budget: int, changes: int, held: int, more: int
    ) -> None:
        room = workspace_room(budget, changes, held)
        step = max(1, budget // HELD_STEPS)
        assert room <= max(0, budget - changes)
        assert room >= budget - changes - step + 1 or room == 0
        # what the later bands add inside one step leaves the workspace its room
        grown = workspace_room(budget, changes, held + more)
        if (changes + held + more - 1) // step == (changes + held - 1) // step:
            assert grown - (held + more) == room - held or grown == 0 or room == 0
