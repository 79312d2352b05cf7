"""Specification of get_knowledge, grep_knowledge and search_knowledge on a real Context."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from dagctx.context import Context
from dagctx.knowledge import KnowledgeStore, Workspace
from dagctx.tools import Tool, ToolError, get_knowledge_tools
from dagctx.tools.knowledge import GREP_MAX_MATCHES, GREP_TIMEOUT

NOTES = "Design notes\nThe cache is LRU.\nEviction happens hourly.\ncache size: 512 MB\n"


def run(tool: Tool[Any], **kwargs: Any) -> str:
    return asyncio.run(tool.execute(**kwargs))


@pytest.fixture
def ctx() -> Context:
    store = KnowledgeStore(chunk_size=200, chunk_overlap=0)
    workspace = Workspace("ws", knowledge_store=store)
    workspace.write_sync("notes", NOTES)
    workspace.write_sync("plan", "Step one: profile.\nStep two: fix the slow query.\n")
    context = Context("t")
    context.state.set("workspace", workspace)
    context.state.set("knowledge_store", store)
    return context


def tools(ctx: Context) -> dict[str, Tool[Any]]:
    return {tool.name: tool.bind(ctx) for tool in get_knowledge_tools()}


class TestGetKnowledgeLimit:
    """``ctx.state["read_limit"]`` caps get_knowledge's answer as it caps read_file's."""

    def test_a_long_artifact_comes_back_cut_to_whole_lines(self, ctx: Context) -> None:
        ctx.state["workspace"].write_sync("log", "".join(f"entry {i:02d}\n" for i in range(50)))
        assert run(tools(ctx)["get_knowledge"], name="log").count("\n") == 50  # no limit
        ctx.state.set("read_limit", 100)
        assert run(tools(ctx)["get_knowledge"], name="log") == "".join(
            f"entry {i:02d}\n" for i in range(11)
        ) + (
            "[get_knowledge: lines 1-11 of 50 of 'log' shown (at most 100 characters a call);"
            " grep_knowledge and search_knowledge find the rest]"
        )
        assert run(tools(ctx)["get_knowledge"], name="plan").startswith("Step one")  # short

    def test_a_first_line_longer_than_the_limit_shows_its_start(self, ctx: Context) -> None:
        ctx.state["workspace"].write_sync("blob", "z" * 300)
        ctx.state.set("read_limit", 100)
        reply = run(tools(ctx)["get_knowledge"], name="blob")
        assert reply.startswith("z" * 100 + "\n[get_knowledge: the start of line 1 of 1 of 'blob'")


class TestGetKnowledge:
    def test_returns_latest_content(self, ctx: Context) -> None:
        ctx.state["workspace"].write_sync("plan", "Revised plan.")
        assert run(tools(ctx)["get_knowledge"], name="notes") == NOTES
        assert run(tools(ctx)["get_knowledge"], name="plan") == "Revised plan."

    def test_unknown_name_lists_available(self, ctx: Context) -> None:
        assert run(tools(ctx)["get_knowledge"], name="ghost") == (
            "Artifact 'ghost' not found. Available artifacts: notes, plan."
        )

    def test_without_workspace_is_a_message(self) -> None:
        message = run(tools(Context("bare"))["get_knowledge"], name="notes")
        assert message.startswith("No Workspace is attached")

    def test_workspace_of_wrong_type_is_a_program_error(self) -> None:
        ctx = Context("t")
        ctx.state.set("workspace", {"notes": "x"})
        with pytest.raises(ToolError, match="must be a Workspace, got dict"):
            run(tools(ctx)["get_knowledge"], name="notes")

    def test_child_context_reads_parent_workspace(self, ctx: Context) -> None:
        child = ctx.fork("child")
        assert run(tools(child)["get_knowledge"], name="notes") == NOTES


class TestGrepKnowledge:
    def test_matching_lines_with_numbers(self, ctx: Context) -> None:
        result = run(tools(ctx)["grep_knowledge"], name="notes", pattern=r"(?i)cache")
        assert result == "2: The cache is LRU.\n4: cache size: 512 MB"

    def test_regex_features(self, ctx: Context) -> None:
        result = run(tools(ctx)["grep_knowledge"], name="notes", pattern=r"\d+ MB$")
        assert result == "4: cache size: 512 MB"

    def test_no_match(self, ctx: Context) -> None:
        result = run(tools(ctx)["grep_knowledge"], name="notes", pattern="redis")
        assert result == "No lines in 'notes' match 'redis'."

    def test_invalid_regex_is_a_message(self, ctx: Context) -> None:
        result = run(tools(ctx)["grep_knowledge"], name="notes", pattern="([unclosed")
        assert result.startswith("Invalid regex '([unclosed': ")

    def test_unknown_artifact(self, ctx: Context) -> None:
        result = run(tools(ctx)["grep_knowledge"], name="ghost", pattern="x")
        assert result.startswith("Artifact 'ghost' not found.")

    def test_catastrophic_backtracking_is_stopped(self, ctx: Context) -> None:
        ctx.state["workspace"].write_sync("evil", "a" * 60 + "b\n")
        started = time.monotonic()
        result = run(tools(ctx)["grep_knowledge"], name="evil", pattern=r"(a|aa)+$")
        elapsed = time.monotonic() - started
        assert "took longer than" in result and "simpler pattern" in result
        # Unstopped, this match takes longer than the age of the universe; the margin only
        # absorbs a loaded machine's scheduling, it does not hide a hang.
        assert elapsed < GREP_TIMEOUT + 20

    def test_many_matches_are_capped_and_counted(self, ctx: Context) -> None:
        ctx.state["workspace"].write_sync("log", "".join(f"hit {i}\n" for i in range(250)))
        lines = run(tools(ctx)["grep_knowledge"], name="log", pattern="hit").splitlines()
        assert len(lines) == GREP_MAX_MATCHES + 1
        assert lines[-1].startswith(f"... and {250 - GREP_MAX_MATCHES} more matching lines")


class TestSearchKnowledge:
    def test_ranked_results_with_scores(self, ctx: Context) -> None:
        result = run(tools(ctx)["search_knowledge"], query="slow query")
        first = result.split("\n\n")[0]
        assert first.startswith("1. plan (chunk 0, score ")
        assert "fix the slow query" in first

    def test_top_k_limits(self, ctx: Context) -> None:
        ctx.state["workspace"].write_sync("more", "cache again")
        result = run(tools(ctx)["search_knowledge"], query="cache", top_k=1)
        assert result.count("(chunk ") == 1

    def test_default_top_k_is_five(self, ctx: Context) -> None:
        for i in range(8):
            ctx.state["workspace"].write_sync(f"doc{i}", f"widget {i}")
        result = run(tools(ctx)["search_knowledge"], query="widget")
        assert result.count("(chunk ") == 5

    def test_no_results_names_what_was_searched(self, ctx: Context) -> None:
        assert run(tools(ctx)["search_knowledge"], query="kubernetes") == (
            "No results for 'kubernetes' in 2 artifacts: notes, plan."
        )
        for i in range(11):
            ctx.state["workspace"].write_sync(f"doc{i}", "widget")
        assert run(tools(ctx)["search_knowledge"], query="kubernetes").endswith(
            "in 13 artifacts: notes, plan, doc0, doc1, doc2, doc3, doc4, doc5, doc6, doc7"
            " and 3 more."
        )

    def test_no_results_in_an_empty_store(self) -> None:
        ctx = Context("empty")
        store = KnowledgeStore()
        ctx.state.set("knowledge_store", store)
        ctx.state.set("workspace", Workspace("empty", knowledge_store=store))
        assert run(tools(ctx)["search_knowledge"], query="kubernetes") == (
            "No results for 'kubernetes' in the knowledge store, which is empty."
        )

    @pytest.mark.parametrize("query", ["", "  ?! "])
    def test_query_without_words(self, ctx: Context, query: str) -> None:
        assert "contains no words" in run(tools(ctx)["search_knowledge"], query=query)

    def test_bad_top_k(self, ctx: Context) -> None:
        search = tools(ctx)["search_knowledge"]
        assert run(search, query="cache", top_k=0) == "top_k must be at least 1, got 0."
        assert "argument 'top_k' must be an integer" in run(search, query="cache", top_k="3")

    def test_without_store_is_a_message(self) -> None:
        message = run(tools(Context("bare"))["search_knowledge"], query="cache")
        assert message.startswith("No KnowledgeStore is attached")
