"""Tests: Guarded actions the person confirms: questions through MCP elicitation."""
from __future__ import annotations

import functools
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from mcp import Client, MCPError

from mediawiki_mcp.config import Config
from mediawiki_mcp.confirm import CONFIRM_PROGRESS_SECONDS, CONFIRM_SCHEMA
from mediawiki_mcp.dispatch import REPEAT_NOTE
from mediawiki_mcp.registry import REGISTRY
from mediawiki_mcp.settings import ConfigError
from mediawiki_mcp.write_pages import UNDELETE_ASKS_FROM
from realwiki import (
    RealWiki,
)
from tests.support import (
    WRITABLE_NOWHERE,
    Result,
    bot_server_for,
    call,
    create,
    editor_edit,
    http_servers,
    make_server,
    node_tool,
    revision_ids,
    tools_list_bytes,
    with_node_path,
)

#: What a client's elicitation callback answers: the person allowed it, said no, or dismissed it.
ALLOW = {"action": "accept", "content": {"allow": True}}


DECLINED = "permission_denied: The person declined, in the client, to let"


def asking_client(server: Any, answers: list[dict[str, Any]], questions: list[Any],
                  before_answer: Callable[[], None] = lambda: None, delay: float = 0) -> Any:
    """An SDK client with the handshake whose person answers each question (elicitation/create)
    with the next of ``answers``, after ``before_answer`` and ``delay`` seconds; ``questions``
    collects the questions' parameters."""
    import mcp_types as mt

    async def elicit(context: Any, params: Any) -> Any:
        questions.append(params)
        await anyio.to_thread.run_sync(before_answer)
        await anyio.sleep(delay)
        return mt.ElicitResult(**answers[len(questions) - 1])
    return Client(server, mode="legacy", elicitation_callback=elicit)


def call_asking(server: Any, tool: str, answers: list[dict[str, Any]], reading: Mapping[str, Any] | None = None,
                **arguments: Any) -> tuple[Result, list[Any]]:
    """A call from a client that can ask the person, who gives ``answers``; its result and the questions.
    ``reading``: get-page's arguments, to read the page first in the same session."""
    questions: list[Any] = []

    async def go() -> Any:
        async with asking_client(server, answers, questions) as client:
            if reading is not None:
                assert not (await client.call_tool("get-page", dict(reading))).is_error
            return await client.call_tool(tool, arguments)
    result = anyio.run(go)
    return Result([b.text for b in result.content if b.type == "text"], bool(result.is_error)), questions


def deletable(wiki: RealWiki, name: str) -> tuple[str, int]:
    """A new page of two revisions to delete: its title and latest revision ID."""
    title = f"Confirm {name} {secrets.token_hex(3)}"
    create(bot_server_for(wiki), title, "To be deleted.")
    assert not call(bot_server_for(wiki), "update-page", title=title, source="To be deleted, twice.").is_error
    return title, revision_ids(wiki, title)[0]


def test_guarded_tools_are_listed_without_confirm_where_the_person_confirms() -> None:
    """A client that can ask is not offered confirm (the person answers instead), nor one that
    MCP_CONFIRM=person refuses; the others keep it. Each description says who confirms: the person,
    asked, or the model with confirm=true once the user agreed to what a call without it showed."""
    def listed(env: dict[str, str], asking: bool) -> dict[str, Any]:
        server = make_server({**WRITABLE_NOWHERE, **env})

        async def go() -> Any:
            async with (asking_client(server, [], []) if asking else Client(server, mode="legacy")) as client:
                return (await client.list_tools()).tools
        return {t.name: t for t in anyio.run(go)}
    guarded = {"delete-page", "protect-page", "rollback-edits"}
    assert {name for name, spec in REGISTRY.tools.items() if spec.guarded} == guarded
    for env, asking, offered in (({}, True, False), ({}, False, True), ({"MCP_CONFIRM": "person"}, False, False),
                                 ({"MCP_CONFIRM": "model"}, True, True)):
        tools = listed(env, asking)
        for name in guarded:
            assert ("confirm" in tools[name].input_schema["properties"]) == offered, (env, asking, name)
            # the description says who confirms: the person asked, or the model's confirm=true, which
            # the user's own request does not give
            said = ("Without confirm=true it only shows " if offered else "It first asks the user, showing "
                    if asking else "Refused for this client: the operator wants the user to confirm it in a client "
                    "that can ask them, and this one cannot.")
            assert said in tools[name].description, (env, asking, name, tools[name].description)
            assert ("(their request does not count)" in tools[name].description) == offered
    saved = sum(tools_list_bytes(list(listed({}, False).values())).values()) - sum(
        tools_list_bytes(list(listed({}, True).values())).values())
    print(f"every toolset listed to a client that can ask: {saved} bytes fewer")
    assert saved > 0


def test_the_person_allows_a_delete_in_the_client_and_the_page_is_deleted(bot_server: Any, wiki: RealWiki) -> None:
    title, latest = deletable(wiki, "allow")
    result, questions = call_asking(bot_server, "delete-page", [ALLOW], title=title)
    assert not result.is_error and result.blocks[0].startswith(f"Deleted.\nTitle: {title}\nLog ID: "), result.text
    assert [q.message for q in questions] == [(
        f"delete-page would delete {title!r} (latest revision {latest}, 21 bytes, 2 revisions) from {wiki.key}.\n"
        f"Wiki: {wiki.key}\nAccount: {wiki.bot_user.split('@')[0]}\nNothing is done unless you allow it.")]
    assert questions[0].requested_schema == CONFIRM_SCHEMA  # one flat boolean, as the specification allows
    assert revision_ids(wiki, title) == []


@pytest.mark.parametrize("answer, how", [
    ({"action": "decline"}, DECLINED),
    ({"action": "cancel"}, "permission_denied: The person dismissed the question to let"),
    ({"action": "accept", "content": {"allow": False}}, DECLINED)])
def test_a_person_who_declines_or_dismisses_the_question_keeps_the_page(
        bot_server: Any, wiki: RealWiki, answer: dict[str, Any], how: str) -> None:
    title, latest = deletable(wiki, "decline")
    result, questions = call_asking(bot_server, "delete-page", [answer], title=title, confirm=True)
    assert len(questions) == 1  # the model's confirm=true does not skip the person
    counts = ", which counts as declined" if "dismissed" in how else ""
    assert result.is_error and result.blocks == [(
        f"{how} delete-page delete {title!r} (latest revision {latest}, 21 bytes, 2 revisions) "
        f"from {wiki.key}{counts}. Nothing was deleted. Do not call delete-page again for this unless the person "
        "asks for it.")]
    assert revision_ids(wiki, title)[0] == latest


def test_an_accepted_answer_without_a_yes_or_no_is_a_decline_that_says_so(bot_server: Any, wiki: RealWiki) -> None:
    """A client whose form sends no boolean (a string "true", nothing) did not carry the person's
    answer: nothing is done, and the model is not told that the person declined."""
    title, latest = deletable(wiki, "no answer")
    for content in ({"allow": "true"}, {}):
        result, _ = call_asking(bot_server, "delete-page", [{"action": "accept", "content": content}], title=title)
        assert result.is_error and result.blocks == [(
            "permission_denied: The client accepted the question to let delete-page delete "
            f"{title!r} (latest revision {latest}, 21 bytes, 2 revisions) from {wiki.key} without a yes or no, so the "
            "person's answer is not known (the client may not show this form), which counts as declined. Nothing was "
            "deleted. Do not call delete-page again for this unless the person asks for it.")], result.text
    assert revision_ids(wiki, title)[0] == latest
    titles = [f"Confirm no answer {letter} {secrets.token_hex(3)}" for letter in "AB"]
    for page in titles:
        create(bot_server, page, "Carp swim here.")
    answer = {"action": "accept", "content": {"choice1": "true", "choice2": True}}
    result, _ = call_asking(bot_server, "replace-in-pages", [answer], titles=titles, find="Carp", replace="Pike",
                            dryRun=False)
    assert result.is_error and result.blocks[0].startswith(
        "permission_denied: The client accepted the question to let replace-in-pages replace 'Carp' with 'Pike' in 2 "
        f"pages on {wiki.key}: "), result.text
    assert f"without a yes or no for {titles[0]}, so the person's answer is not known" in result.text
    result, _ = call_asking(bot_server, "replace-in-pages", [{"action": "accept", "content": {"allow": True}}],
                            titles=titles, find="Carp", replace="Pike", dryRun=False)  # none of the page fields
    assert result.is_error and (f"revision {revision_ids(wiki, titles[1])[0]}) without a yes or no, so the person's "
                                "answer is not known") in result.text, result.text
    assert [wiki.wikitext(page) for page in titles] == ["Carp swim here."] * 2  # not the second page alone


def test_a_client_that_cannot_ask_keeps_the_preview_and_confirm_contract(wiki: RealWiki) -> None:
    title, latest = deletable(wiki, "no capability")
    server = make_server(wiki.env())
    for client in ({"mode": "legacy"}, {}):  # no elicitation declared; the 2026 protocol, which cannot ask
        async def go(options: dict[str, Any] = client) -> Any:
            async with Client(server, **options) as session:
                return await session.call_tool("delete-page", {"title": title})
        asked = anyio.run(go)
        assert asked.is_error and asked.content[0].text == (
            f"invalid_input: Nothing was deleted. delete-page would delete {title!r} (latest revision {latest}, "
            f"21 bytes, 2 revisions) from {wiki.key}. Ask the user to confirm, then call delete-page again with "
            "confirm=true.")
    assert revision_ids(wiki, title)[0] == latest
    assert not call(server, "delete-page", title=title, confirm=True).is_error
    assert revision_ids(wiki, title) == []


def test_with_mcp_confirm_person_a_client_that_cannot_ask_is_refused(wiki: RealWiki) -> None:
    title, latest = deletable(wiki, "person")
    server = make_server(wiki.env(MCP_CONFIRM="person"))
    refused = call(server, "delete-page", title=title, confirm=True)
    assert refused.is_error and refused.blocks[0].startswith(
        f"permission_denied: Nothing was deleted. delete-page would delete {title!r} (latest revision {latest}, "
        f"21 bytes, 2 revisions) from {wiki.key}. This server requires the person to confirm it in the client "
        "(MCP_CONFIRM=person), and this client cannot ask them"), refused.text
    assert "Claude Code, VS Code and the MCP Inspector" in refused.text
    assert revision_ids(wiki, title)[0] == latest
    result, questions = call_asking(server, "delete-page", [ALLOW], title=title)
    assert not result.is_error and len(questions) == 1 and revision_ids(wiki, title) == []


def test_with_mcp_confirm_person_a_replace_preview_to_a_client_that_cannot_ask_says_no_save_follows(
        wiki: RealWiki) -> None:
    """replace-in-pages' dry run sent the model to call again with dryRun=false, which is always
    refused where the person confirms and this client cannot ask them: it says so, and who can; to a
    client that asks, it still names that call, which then asks the person."""
    title = f"Person replace {secrets.token_hex(3)}"
    create(bot_server_for(wiki), title, "Carp swim here.")
    server = make_server(wiki.env(MCP_CONFIRM="person"))
    preview = call(server, "replace-in-pages", titles=[title], find="Carp", replace="Pike")
    assert not preview.is_error and preview.blocks[0].startswith(
        "Dry run: nothing was saved. 1 of 1 page would change (1 replacement). No call of replace-in-pages saves "
        "them from here. This server requires the person to confirm it in the client (MCP_CONFIRM=person), and "
        "this client cannot ask them: it connected with the 2026-07-28 protocol, whose calls cannot carry a "
        "question. Clients that ask"), preview.text
    assert "The person can also make these changes on the wiki themselves.\n" in preview.text
    assert "dryRun=false" not in preview.text
    refused = call(server, "replace-in-pages", titles=[title], find="Carp", replace="Pike", dryRun=False)
    assert refused.is_error and refused.blocks[0].startswith("permission_denied: "), refused.text
    asked, questions = call_asking(server, "replace-in-pages", [], titles=[title], find="Carp", replace="Pike")
    assert "To save them, call replace-in-pages again with dryRun=false;" in asked.text and questions == []
    assert wiki.wikitext(title) == "Carp swim here."


def test_with_mcp_confirm_person_the_refusal_says_why_this_client_or_server_cannot_ask(wiki: RealWiki) -> None:
    """The client that did not declare elicitation, the 2026 protocol, and a stateless server,
    where no client can ask and only the operator can change it."""
    title, latest = deletable(wiki, "why not")
    server = make_server(wiki.env(MCP_CONFIRM="person"))

    async def go(options: dict[str, Any]) -> str:
        async with Client(server, **options) as client:
            return (await client.call_tool("delete-page", {"title": title})).content[0].text
    refused = [anyio.run(go, {"mode": "legacy"}), anyio.run(go, {"elicitation_callback": lambda *_: None})]
    with http_servers((wiki.env(MCP_CONFIRM="person"), ("--stateless",))) as (http,):
        async def stateless() -> Any:
            async with asking_client(http.url, [ALLOW], []) as client:
                return await client.call_tool("delete-page", {"title": title})
        refused.append(anyio.run(stateless).content[0].text)
        assert "MCP_CONFIRM=person on stateless HTTP: no client can be asked here, so every guarded action" in http.log
    assert "and this client cannot ask them: it did not declare MCP elicitation (form mode) when it connected. " \
        "Clients that ask" in refused[0], refused[0]
    assert "and this client cannot ask them: it connected with the 2026-07-28 protocol, whose calls cannot carry " \
        "a question. Clients that ask" in refused[1], refused[1]
    assert refused[2].startswith("permission_denied: Nothing was deleted.") and refused[2].endswith(
        "(MCP_CONFIRM=person), and no client can ask them on this server: it serves stateless HTTP (--stateless or "
        "MCP_STATELESS), where the answer could reach another replica. Only its operator can change this: serve "
        "HTTP with sessions, or stdio. No retry by the model changes this."), refused[2]
    assert revision_ids(wiki, title)[0] == latest


def test_with_mcp_confirm_model_the_person_is_never_asked(wiki: RealWiki) -> None:
    title, latest = deletable(wiki, "model")
    server = make_server(wiki.env(MCP_CONFIRM="model"))
    preview, questions = call_asking(server, "delete-page", [ALLOW], title=title)
    assert preview.is_error and preview.blocks[0].startswith("invalid_input: Nothing was deleted.")
    assert revision_ids(wiki, title)[0] == latest
    done, questions = call_asking(server, "delete-page", [ALLOW], title=title, confirm=True)
    assert not done.is_error and questions == [] and revision_ids(wiki, title) == []


def test_a_page_edited_while_the_person_decides_is_a_conflict_and_is_not_deleted(
        bot_server: Any, wiki: RealWiki) -> None:
    title, latest = deletable(wiki, "changed")
    questions: list[Any] = []

    async def go() -> Any:
        edit = functools.partial(editor_edit, wiki, title, "Edited while the person was being asked.")
        async with asking_client(bot_server, [ALLOW], questions, before_answer=edit) as client:
            return await client.call_tool("delete-page", {"title": title})
    result = anyio.run(go)
    now = revision_ids(wiki, title)[0]
    assert result.is_error and result.content[0].text.startswith(
        f"conflict: What delete-page would do changed while the person was being asked, so it was not done: they "
        f"accepted that it would delete {title!r} (latest revision {latest}, 21 bytes, 2 revisions) from {wiki.key}. "
        f"Now it would delete {title!r} (latest revision {now}, "), result.content[0].text
    assert now != latest and wiki.wikitext(title) == "Edited while the person was being asked."


def test_no_answer_within_the_timeout_is_a_decline_and_progress_keeps_the_call_alive(wiki: RealWiki) -> None:
    title, latest = deletable(wiki, "timeout")
    server = make_server(wiki.env(MCP_CONFIRM_TIMEOUT_SECONDS="1.5"))
    questions: list[Any] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def heard(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async def go() -> Any:
        async with asking_client(server, [ALLOW], questions, delay=4) as client:
            return await client.call_tool("delete-page", {"title": title}, progress_callback=heard)
    result = anyio.run(go)
    assert result.is_error and result.content[0].text.startswith(
        "permission_denied: The person did not answer within 1.5 seconds (MCP_CONFIRM_TIMEOUT_SECONDS) the question "
        f"to let delete-page delete {title!r} (latest revision {latest}, 21 bytes, 2 revisions) from {wiki.key}, "
        "which counts as declined. Nothing was deleted."), result.content[0].text
    assert progress and progress[0][1:] == (1.5, "Waiting for the person to answer in the client")
    assert revision_ids(wiki, title)[0] == latest


def test_progress_keeps_rising_from_the_wait_for_the_person_to_the_saves(bot_server: Any, wiki: RealWiki) -> None:
    """The specification wants each progress value above the last: the seconds the person took
    (reported every CONFIRM_PROGRESS_SECONDS) are not followed by the saves counting from 1 again."""
    titles = [f"Confirm progress {letter} {secrets.token_hex(3)}" for letter in "AB"]
    for title in titles:
        create(bot_server, title, "Carp swim here.")
    progress: list[tuple[float, float | None, str | None]] = []

    async def heard(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async def go() -> Any:
        picked = {"action": "accept", "content": {"choice1": True, "choice2": True}}
        async with asking_client(bot_server, [picked], [], delay=CONFIRM_PROGRESS_SECONDS + 0.5) as client:
            return await client.call_tool("replace-in-pages", {"titles": titles, "find": "Carp", "replace": "Pike",
                                                               "dryRun": False}, progress_callback=heard)
    result = anyio.run(go)
    assert not result.is_error and result.content[0].text.startswith("Saved 2 of 2 pages."), result.content[0].text
    values = [done for done, _, _ in progress]
    assert values == sorted(set(values)), progress  # each above the last
    waited = [p for p in progress if p[2] == "Waiting for the person to answer in the client"]
    assert len(waited) == 2 and waited[1][0] >= CONFIRM_PROGRESS_SECONDS, progress
    assert progress[-1] == (waited[1][0] + 2, waited[1][0] + 2,  # the saves count on from the wait
                            f"{titles[1]} | saved | {revision_ids(wiki, titles[1])[0]}"), progress


def test_a_client_that_gives_up_on_the_call_while_the_person_decides_gets_nothing_done(wiki: RealWiki) -> None:
    """A client whose own timeout does not wait for the person (progress does not reset it) cancels
    the call: the question goes with it, and a yes that comes later does nothing."""
    title, latest = deletable(wiki, "gives up")
    questions: list[Any] = []

    async def go() -> None:
        async with asking_client(make_server(wiki.env()), [ALLOW], questions, delay=2) as client:
            with pytest.raises(MCPError, match="timed out"):
                await client.call_tool("delete-page", {"title": title}, read_timeout_seconds=0.5)
            await anyio.sleep(3)  # past the person's late yes
    anyio.run(go)
    assert len(questions) == 1 and revision_ids(wiki, title)[0] == latest


def test_an_allowed_delete_with_an_idempotency_key_is_not_asked_or_done_twice(bot_server: Any, wiki: RealWiki) -> None:
    title, _ = deletable(wiki, "key")
    questions: list[Any] = []

    async def go() -> list[Any]:
        async with asking_client(bot_server, [ALLOW, ALLOW], questions) as client:  # keys are a client's own
            return [await client.call_tool("delete-page", {"title": title, "idempotencyKey": "confirm-key"})
                    for _ in range(2)]
    first, again = anyio.run(go)
    assert not first.is_error and first.content[0].text.startswith("Deleted."), first.content[0].text
    assert not again.is_error and again.content[0].text.startswith(REPEAT_NOTE + "Deleted.")
    assert len(questions) == 1 and revision_ids(wiki, title) == []


def test_the_person_confirms_a_protection_and_a_rollback(bot_server: Any, wiki: RealWiki) -> None:
    title = f"Confirm protect {secrets.token_hex(3)}"
    create(bot_server, title, "Protect me.")
    protected, questions = call_asking(bot_server, "protect-page", [ALLOW], title=title, edit="sysop")
    assert not protected.is_error, protected.text
    assert questions[0].message.startswith(f"protect-page would change the protection of {title!r} on {wiki.key}: "
                                           "edit: none -> sysop.\nWiki: "), questions[0].message
    page = wiki.raw_get(action="query", titles=title, prop="info", inprop="protection")["query"]["pages"][0]
    assert [(p["type"], p["level"]) for p in page["protection"]] == [("edit", "sysop")]
    editor_edit(wiki, title, "An edit to roll back.")
    declined, questions = call_asking(bot_server, "rollback-edits", [{"action": "decline"}], title=title,
                                      user="Editor")
    assert declined.is_error and declined.blocks[0].startswith(DECLINED)
    assert "revert the latest edit to" in questions[0].message and wiki.wikitext(title) == "An edit to roll back."
    done, _ = call_asking(bot_server, "rollback-edits", [ALLOW], title=title, user="Editor")
    assert not done.is_error and wiki.wikitext(title) == "Protect me.", done.text


def test_the_person_picks_the_pages_a_replace_across_pages_saves(bot_server: Any, wiki: RealWiki) -> None:
    titles = [f"Confirm replace {letter} {secrets.token_hex(3)}" for letter in "ABC"]
    for title in titles:
        create(bot_server, title, "Carp swim here.")
    revids = [revision_ids(wiki, title)[0] for title in titles]
    arguments = {"titles": titles, "find": "Carp", "replace": "Pike"}
    dry, questions = call_asking(bot_server, "replace-in-pages", [], **arguments)  # a dry run asks nothing
    assert not dry.is_error and "3 of 3 pages would change" in dry.text and questions == []
    picked = {"action": "accept", "content": {"choice1": True, "choice2": False, "choice3": True}}
    saved, questions = call_asking(bot_server, "replace-in-pages", [picked], **arguments, dryRun=False)
    rows = "; ".join(f"{title} (1 replacement, revision {revid})" for title, revid in zip(titles, revids))
    assert questions[0].message == (f"replace-in-pages would replace 'Carp' with 'Pike' in 3 pages on {wiki.key}: "
                                    f"{rows}.\nWiki: {wiki.key}\nAccount: Admin\nPick what to do; nothing else is done.")
    assert [field["title"] for field in questions[0].requested_schema["properties"].values()] == titles
    assert not saved.is_error and saved.blocks[0].startswith("Saved 2 of 3 pages."), saved.text
    assert f"{titles[1]} | skipped | not picked by the person; nothing was saved" in saved.text
    assert [wiki.wikitext(title) for title in titles] == ["Pike swim here.", "Carp swim here.", "Pike swim here."]
    declined, _ = call_asking(bot_server, "replace-in-pages", [{"action": "decline"}], **arguments, dryRun=False)
    assert declined.is_error and declined.blocks[0].startswith(DECLINED)
    none, _ = call_asking(bot_server, "replace-in-pages", [{"action": "accept", "content": {"choice1": False}}],
                          **arguments, dryRun=False)
    assert none.is_error and none.blocks[0].startswith(DECLINED)
    assert wiki.wikitext(titles[1]) == "Carp swim here."
    assert not call(bot_server, "replace-in-pages", **arguments, dryRun=False).is_error  # no question: as today
    assert wiki.wikitext(titles[1]) == "Pike swim here."


def test_the_person_reads_a_regular_expression_as_it_was_written(bot_server: Any, wiki: RealWiki) -> None:
    """Not repr's doubled backslashes, which would read as an expression matching a backslash."""
    title = f"Confirm regex {secrets.token_hex(3)}"
    create(bot_server, title, "Carp swim here.")
    declined, questions = call_asking(bot_server, "replace-in-pages", [{"action": "decline"}], titles=[title],
                                      find=r"\b(C)arp\b", replace=r"\1od", regex=True, dryRun=False)
    assert declined.is_error and questions[0].message.startswith(
        r"replace-in-pages would replace '\b(C)arp\b' with '\1od' (a regular expression) in 1 page on "), questions
    assert wiki.wikitext(title) == "Carp swim here."


def test_the_person_is_told_the_categories_a_replace_removes_from_each_page(bot_server: Any, wiki: RealWiki) -> None:
    title = f"Confirm removed category {secrets.token_hex(3)}"
    revid = create(bot_server, title, "Carp swim here.\n[[Category:Fish]]")
    declined, questions = call_asking(bot_server, "replace-in-pages", [{"action": "decline"}], titles=[title],
                                      find="\n[[Category:Fish]]", replace="", dryRun=False)
    assert declined.is_error and f"{title} (1 replacement, revision {revid}; Removed: [[Category:Fish]])." in \
        questions[0].message, questions
    assert wiki.wikitext(title) == "Carp swim here.\n[[Category:Fish]]"


def test_the_person_confirms_an_undo_of_a_run_that_holds_other_peoples_edits(bot_server: Any, wiki: RealWiki) -> None:
    title = f"Confirm undo run {secrets.token_hex(3)}"
    create(bot_server, title, "One.\nTwo.\nThree.")
    assert not call(bot_server, "update-page", title=title, find="One.", replace="One!").is_error
    editor_edit(wiki, title, "One!\nTwo, a good edit.\nThree.")
    newest, oldest = revision_ids(wiki, title)[:2]
    alone, questions = call_asking(bot_server, "undo-edit", [], revisionId=newest)  # one person's edit: no question
    assert not alone.is_error and questions == [] and wiki.wikitext(title) == "One!\nTwo.\nThree."
    undone = revision_ids(wiki, title)[0]
    kept, questions = call_asking(bot_server, "undo-edit", [{"action": "decline"}], revisionId=undone,
                                  oldestRevisionId=oldest)
    assert questions[0].message.startswith(
        f"undo-edit would undo revisions {oldest} to {undone} by Admin and Editor of {title!r} on {wiki.key}, whose "
        f"latest revision is {undone}: the edits of 2 people.\n"), questions[0].message
    assert kept.is_error and revision_ids(wiki, title)[0] == undone
    done, _ = call_asking(bot_server, "undo-edit", [ALLOW], revisionId=undone, oldestRevisionId=oldest)
    assert not done.is_error and wiki.wikitext(title) == "One.\nTwo.\nThree.", done.text


def test_the_person_confirms_a_move_with_subpages_and_an_undelete_of_many_revisions(
        bot_server: Any, wiki: RealWiki) -> None:
    parent = f"Help:Confirm move {secrets.token_hex(3)}"
    create(bot_server, parent, "Parent.")
    alone, questions = call_asking(bot_server, "move-page", [], fromTitle=parent, toTitle=parent + " alone",
                                   moveSubpages=True)  # no subpages: nothing to ask
    assert not alone.is_error and questions == [], alone.text
    parent += " alone"
    create(bot_server, f"{parent}/Child", "Child.")
    kept, questions = call_asking(bot_server, "move-page", [{"action": "decline"}], fromTitle=parent,
                                  toTitle=parent + " moved", moveSubpages=True)
    assert questions[0].message.startswith(f"move-page would move {parent!r} to {parent + ' moved'!r} on {wiki.key} "
                                           f"with its 1 subpage: {parent}/Child.\n"), questions[0].message
    assert kept.is_error and wiki.wikitext(parent) == "Parent." and wiki.wikitext(f"{parent}/Child") == "Child."
    moved, _ = call_asking(bot_server, "move-page", [ALLOW], fromTitle=parent, toTitle=parent + " moved",
                           moveSubpages=True)
    assert not moved.is_error and wiki.wikitext(f"{parent} moved/Child") == "Child.", moved.text

    title = f"Confirm undelete {secrets.token_hex(3)}"
    create(bot_server, title, "Revision 0.")
    for number in range(1, UNDELETE_ASKS_FROM):
        assert not call(bot_server, "update-page", title=title, source=f"Revision {number}.").is_error
    revids = revision_ids(wiki, title)
    assert not call(bot_server, "delete-page", title=title, confirm=True).is_error
    kept, questions = call_asking(bot_server, "undelete-page", [{"action": "cancel"}], title=title)
    assert questions[0].message.startswith(
        f"undelete-page would restore {UNDELETE_ASKS_FROM} deleted revisions of {title!r} on {wiki.key} (revisions "
        f"{revids[-1]} to {revids[0]}, by Admin).\n"), questions[0].message
    assert kept.is_error and "Nothing was restored." in kept.text and revision_ids(wiki, title) == []
    restored, _ = call_asking(bot_server, "undelete-page", [ALLOW], title=title)
    assert not restored.is_error and revision_ids(wiki, title) == revids, restored.text


def test_the_person_confirms_a_whole_page_write_that_the_shrink_guard_lets_through_only_when_told(
        bot_server: Any, wiki: RealWiki) -> None:
    title = f"Confirm shrink {secrets.token_hex(3)}"
    text = "Lead.\n\n== One ==\nFirst section.\n\n== Two ==\nSecond section."
    create(bot_server, title, text)
    latest = revision_ids(wiki, title)[0]
    read = {"title": title}  # each call is a session of its own, which reads the page first
    grown, questions = call_asking(bot_server, "update-page", [], read, title=title, source=text + "\nMore.",
                                   removeSections=True)  # the guard would let it through anyway: no question
    assert not grown.is_error and questions == [], grown.text
    latest = revision_ids(wiki, title)[0]
    for answer, arguments in (({"action": "decline"}, {"source": "== Two ==\nSecond section.", "removeSections": True}),
                              ({"action": "decline"}, {"source": "", "blank": True})):
        kept, questions = call_asking(bot_server, "update-page", [answer], read, title=title, **arguments)
        what = "empty it" if arguments.get("blank") else "drop the rest of its text"
        assert questions[0].message.startswith(
            f"update-page would replace all of {title!r} on {wiki.key} (revision {latest}, {len(text) + 6} bytes) with "
            f"{len(arguments['source'])} bytes of new text, which would {what}.\n"), questions[0].message
        assert kept.is_error and kept.blocks[0].startswith(DECLINED) and revision_ids(wiki, title)[0] == latest
    done, _ = call_asking(bot_server, "update-page", [ALLOW], read, title=title, source="== Two ==\nSecond section.",
                          removeSections=True)
    assert not done.is_error and wiki.wikitext(title) == "== Two ==\nSecond section.", done.text


def test_the_person_is_asked_over_stdio_and_over_http(wiki: RealWiki) -> None:
    """The installed console script over real stdio, and over Streamable HTTP in a session."""
    from mcp.client.stdio import StdioServerParameters
    script = shutil.which("mediawiki-mcp", path=str(Path(sys.executable).parent)) or shutil.which("mediawiki-mcp")
    assert script, "the console script is not installed: pip install -e '.[test]'"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MEDIAWIKI_", "MCP_"))}
    with http_servers((wiki.env(), ())) as (http,):
        for target in (StdioServerParameters(command=script, env={**clean, **wiki.env()}), http.url):
            title, latest = deletable(wiki, "transport")
            questions: list[Any] = []

            async def go(target: Any = target, title: str = title, questions: list[Any] = questions) -> list[Any]:
                async with asking_client(target, [{"action": "decline"}, ALLOW], questions) as client:
                    declined = await client.call_tool("delete-page", {"title": title})
                    kept = revision_ids(wiki, title)
                    return [declined, kept, await client.call_tool("delete-page", {"title": title})]
            declined, kept, deleted = anyio.run(go)
            assert declined.is_error and declined.content[0].text.startswith(DECLINED)
            assert kept[0] == latest and len(questions) == 2
            assert not deleted.is_error and revision_ids(wiki, title) == [], deleted.content[0].text


def test_a_client_over_stateless_http_is_not_asked_and_keeps_the_preview_and_confirm(wiki: RealWiki) -> None:
    """Without a session, the answer to a question could reach another replica: no question."""
    title, latest = deletable(wiki, "stateless")
    kept: list[int] = []
    questions: list[Any] = []
    with http_servers((wiki.env(), ("--stateless",))) as (http,):
        async def go() -> list[Any]:
            async with asking_client(http.url, [ALLOW], questions) as client:
                asked = await client.call_tool("delete-page", {"title": title})
                kept.extend(revision_ids(wiki, title))
                return [asked, await client.call_tool("delete-page", {"title": title, "confirm": True})]
        asked, done = anyio.run(go)
    assert asked.is_error and asked.content[0].text.startswith("invalid_input: Nothing was deleted."), asked.content
    assert kept[0] == latest and questions == []
    assert not done.is_error and revision_ids(wiki, title) == [], done.content


@pytest.mark.parametrize("variable, value, message", [
    ("MCP_CONFIRM", "always", "MCP_CONFIRM must be auto or person or model, not 'always'"),
    ("MCP_CONFIRM_TIMEOUT_SECONDS", "0", "MCP_CONFIRM_TIMEOUT_SECONDS must be a number of seconds above 0"),
    ("MCP_CONFIRM_TIMEOUT_SECONDS", "5m", "MCP_CONFIRM_TIMEOUT_SECONDS must be a number of seconds above 0")])
def test_the_confirm_settings_refuse_what_they_cannot_read(variable: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        Config.from_env({**WRITABLE_NOWHERE, variable: value})
    assert Config.from_env({**WRITABLE_NOWHERE, "MCP_CONFIRM": " Person ",
                              "MCP_CONFIRM_TIMEOUT_SECONDS": "90"}).confirm_timeout_seconds == 90


@pytest.mark.node
def test_the_inspector_cli_cannot_be_asked_so_it_gets_the_preview_and_confirm(wiki: RealWiki, tmp_path: Path) -> None:
    """The MCP Inspector's command line (2.12) declares no elicitation (its CLI builds its client
    with elicit: false): a guarded action answers it with the preview, and confirm=true does it."""
    title, latest = deletable(wiki, "inspector")
    script = shutil.which("mediawiki-mcp", path=str(Path(sys.executable).parent)) or shutil.which("mediawiki-mcp")
    assert script, "the console script is not installed: pip install -e '.[test]'"
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"wiki": {"command": script, "env": wiki.env()}}}))

    def inspector(*tool_args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([node_tool("mcp-inspector"), "--cli", "--config", str(tmp_path / "mcp.json"), "--server",
                               "wiki", "--protocol-era", "legacy", "--method", "tools/call", "--tool-name",
                               "delete-page", "--tool-arg", f"title={title}", *tool_args], capture_output=True,
                              text=True, timeout=300, env=with_node_path() | {"MCP_INSPECTOR_SECRET_STORE": "memory"},
                              check=False, stdin=subprocess.DEVNULL)
    asked = inspector()
    assert json.loads(asked.stdout)["content"][0]["text"].startswith(
        f"invalid_input: Nothing was deleted. delete-page would delete {title!r} (latest revision {latest}, "), asked.stdout
    assert revision_ids(wiki, title)[0] == latest
    done = inspector("confirm=true")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert json.loads(done.stdout)["content"][0]["text"].startswith("Deleted.") and revision_ids(wiki, title) == []
