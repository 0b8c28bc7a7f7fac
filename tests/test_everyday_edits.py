"""Tests: Everyday edits in one call: categories, talk pages, a replace across many pages."""
from __future__ import annotations

import dataclasses
import re
import secrets
import threading
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from mcp import Client

from mediawiki_mcp.client import MAX_ATTEMPTS
from mediawiki_mcp.config import Config, WikiConfig
from mediawiki_mcp.dispatch import REPEAT_NOTE
from mediawiki_mcp.registry import Registry
from mediawiki_mcp.server import create_server
from mediawiki_mcp.settings import TOOLSETS
from mediawiki_mcp.state import ServerState
from realwiki import (
    RealWiki,
    WikiFarm,
)
from tests.support import (
    WRITABLE_NOWHERE,
    FakeWiki,
    HoldingProxy,
    Reply,
    RequestCounter,
    Result,
    assert_requests_per_call,
    bare_login,
    bot_server_for,
    call,
    content_of,
    create,
    editor_edit,
    fake_server,
    field,
    latest_revision,
    list_tools,
    make_server,
    on_every_version,
    revision_ids,
    shared_bot_server,
    signature,
    threaded_talk,
)


def test_a_passage_changed_by_find_replace_leaves_the_last_read_the_base_of_a_whole_write(wiki: RealWiki) -> None:
    """A find-replace (or any change the server composes) does not show the model the page: a
    whole-page write after it is still based on the model's last read, so an edit made by
    someone else before the find-replace is merged, never overwritten."""
    server = make_server(wiki.env())
    title = "Composed edit base test"
    create(bot_server_for(wiki), title, "Line A.\n\nLine B.\n\nLine C.")
    seen = content_of(call(server, "get-page", title=title).blocks[0])
    editor_edit(wiki, title, "Line A.\n\nLine B, by the Editor.\n\nLine C.")
    replaced = call(server, "update-page", title=title, find="Line C.", replace="Line C, replaced.")
    assert not replaced.is_error, replaced.text
    result = call(server, "update-page", title=title, source=seen.replace("Line A.", "Line A, by the model."))
    assert not result.is_error and result.blocks[0].startswith("Saved, merged with "), result.text
    assert wiki.wikitext(title) == "Line A, by the model.\n\nLine B, by the Editor.\n\nLine C, replaced."


EVERYDAY_TOOLS = ("update-page-categories", "add-talk-topic", "reply-on-talk-page", "replace-in-pages")


def test_everyday_edit_tools_are_annotated_and_routed_and_replace_previews_by_default() -> None:
    tools = {t.name: t for t in list_tools(create_server(Config.from_env({**WRITABLE_NOWHERE,
                                                                              "MCP_TOOLSETS": "all"})))}
    hints = {name: (tools[name].annotations.read_only_hint, tools[name].annotations.destructive_hint,
                    tools[name].annotations.idempotent_hint) for name in EVERYDAY_TOOLS}
    assert hints == {"update-page-categories": (False, True, True), "add-talk-topic": (False, False, False),
                     "reply-on-talk-page": (False, False, False), "replace-in-pages": (False, True, False)}
    for name in EVERYDAY_TOOLS:
        properties = tools[name].input_schema["properties"]
        assert {"dryRun", "idempotencyKey"} <= set(properties), name
        assert properties["dryRun"].get("default", False) is (name == "replace-in-pages"), name
    assert "update-page-categories" in tools["update-page"].description
    assert "replace-in-pages" in tools["update-page"].description
    assert "use update-page" in tools["update-page-categories"].description
    assert "use update-page" in tools["replace-in-pages"].description
    assert "reply-on-talk-page" in tools["add-talk-topic"].description
    assert "add-talk-topic" in tools["reply-on-talk-page"].description
    registry = Registry()
    with pytest.raises(TypeError, match="dry_run_default needs dry_run"):
        registry.tool("test-default", "Test default", toolset="pages", read_only=False, destructive=True, idempotent=True,
                      dry_run_default=True)(lambda ctx: "")


@pytest.mark.parametrize("tool, arguments, message", [
    ("update-page-categories", {"title": "Apple"}, "Give add or remove"),
    ("update-page-categories", {"title": "Apple", "add": ["A|b]]"]}, "add holds 'A|b]]', which is not a category"),
    ("update-page-categories", {"title": "Apple", "remove": ["A#b|c"]}, "remove holds 'A#b|c', which is not a"),
    ("update-page-categories", {"title": "Apple", "add": ["Fruits"], "remove": ["Category:fruits"]},
     "Fruits cannot be both added and removed"),
    ("add-talk-topic", {"title": "Apple", "heading": " ", "message": "Hi"}, "heading and message must not"),
    ("add-talk-topic", {"title": "Special:Random", "heading": "H", "message": "Hi"}, "without talk pages"),
    ("add-talk-topic", {"title": "Apple", "heading": "H", "message": "Hi.\n== H2 ==\nMore."}, "holds a heading"),
    ("reply-on-talk-page", {"title": "Apple", "topic": "1", "message": "  "}, "message must not be empty"),
    ("replace-in-pages", {"find": "a", "replace": "b"}, "Give titles or category"),
    ("replace-in-pages", {"find": "a", "replace": "b", "titles": ["Apple"], "category": "Fruits"},
     "Give titles or category"),
    ("replace-in-pages", {"find": "", "replace": "b", "titles": ["Apple"]}, "'find' must not be empty"),
    ("replace-in-pages", {"find": "a", "replace": "b", "titles": [f"P{n}" for n in range(51)]},
     "takes at most 50 items"),
])
def test_bad_everyday_edit_arguments_change_nothing_and_send_nothing(
        wiki: RealWiki, tool: str, arguments: dict[str, Any], message: str) -> None:
    server = make_server(wiki.env())
    counter = RequestCounter(server)  # site info and the login come first, before counting
    with counter.counting() as sent:
        result = call(server, tool, **arguments)
    assert result.is_error and result.blocks[0].startswith("invalid_input: ") and message in result.text, result.text
    assert sent[0] <= 1, counter.urls  # at most the account's rights, never the page or an edit


def test_everyday_edits_honour_read_only_wikis_tags_and_the_attribution_setting(wiki: RealWiki) -> None:
    session, csrf = bare_login(wiki, "Admin", wiki.admin_password)  # a tag is made with the main password
    made = session.post(wiki.api, data={"action": "managetags", "operation": "create", "tag": "mcp-everyday",
                                        "token": csrf, "format": "json"}, timeout=30).json()
    assert "error" not in made, made
    writable = WikiConfig(key=wiki.key, url=wiki.api, username=wiki.bot_user, password=wiki.bot_password,
                            read_only=False, tags=["mcp-everyday"], attribute_edits=False)
    locked = dataclasses.replace(writable, key="locked.example", read_only=True)
    server = create_server(state=ServerState.from_config(Config(toolsets=frozenset(TOOLSETS),
        wikis={wiki.key: writable, "locked.example": locked}, default_wiki=wiki.key)))
    create(bot_server_for(wiki), "Talk:Everyday tags test", threaded_talk(":"))
    calls = [("update-page-categories", {"title": "Talk:Everyday tags test", "add": ["Everyday fruits"]}),
             ("reply-on-talk-page", {"title": "Everyday tags test", "topic": "Plans", "message": "Tagged."}),
             ("add-talk-topic", {"title": "Everyday tags test", "heading": "Tags", "message": "Tagged."}),
             ("replace-in-pages", {"titles": ["Talk:Everyday tags test"], "find": "Tagged.", "replace": "Tagged!",
                                   "dryRun": False, "comment": "Exclaim"})]
    for tool, arguments in calls:
        before = revision_ids(wiki, "Talk:Everyday tags test")
        refused = call(server, tool, wiki="locked.example", **arguments)
        assert refused.is_error and refused.blocks[0].startswith("permission_denied: The wiki locked.example is "
                                                                 "configured read-only"), (tool, refused.text)
        assert revision_ids(wiki, "Talk:Everyday tags test") == before
        result = call(server, tool, **arguments)
        assert not result.is_error, (tool, result.text)
        revision = latest_revision(wiki, "Talk:Everyday tags test")
        assert revision["tags"] == ["mcp-everyday"] and "mediawiki-mcp" not in revision["comment"], (tool, revision)
    assert latest_revision(wiki, "Talk:Everyday tags test")["comment"] == "Exclaim"


# -- update-page-categories -------------------------------------------------------------

@on_every_version
def test_categories_are_added_and_removed_whatever_the_sort_key_and_the_name(bot_server: Any,
                                                                             wiki: RealWiki) -> None:
    create(bot_server, "Template:Category placer", "<includeonly>[[Category:Placed by template]]</includeonly>")
    title = "Category edit test"
    text = ("An apple is red.\n[[Image:Everyday picture.png|thumb|A picture, not a category]]\n"
            "<!-- [[Category:Commented out]] -->\n{{Category placer}}\n\n"
            "[[category: everyday_fruits |Apple, red]]\n[[Category:Red things]]\nAfter the categories.")
    revid = create(bot_server, title, text)
    arguments = {"title": title, "add": ["Category:Sweet things", "Red_things"],
                 "remove": ["Everyday fruits", "Placed by template", "Commented out"]}
    dry = call(bot_server, "update-page-categories", dryRun=True, **arguments)
    assert not dry.is_error, dry.text
    assert dry.blocks[0].startswith("Dry run: nothing was saved.") and revision_ids(wiki, title) == [revid]
    assert "-[[category: everyday_fruits |Apple, red]]\n" in dry.text and "+[[Category:Sweet things]]" in dry.text
    saved = call(bot_server, "update-page-categories", comment="Recategorise", **arguments)
    assert not saved.is_error and saved.blocks[0].startswith("Saved.\n"), saved.text
    assert wiki.wikitext(title) == text.replace("[[category: everyday_fruits |Apple, red]]\n", "").replace(
        "[[Category:Red things]]", "[[Category:Red things]]\n[[Category:Sweet things]]")
    assert field(saved, "Added") == "Category:Sweet things"
    assert field(saved, "Removed") == "Category:Everyday fruits"
    assert field(saved, "Already in") == "Category:Red things"
    assert field(saved, "Not removed") == ("Category:Placed by template (placed by a template, not in the page's "
                                           "wikitext); Category:Commented out (not on the page)")
    # the missing picture puts the page in the wiki's tracking category: the answer lists it, as the wiki does
    assert field(saved, "Categories") == ("Category:Pages with broken file links, Category:Placed by template, "
                                          "Category:Red things, Category:Sweet things")
    assert latest_revision(wiki, title)["comment"] == "Recategorise (via mediawiki-mcp)"
    placed = wiki.raw_get(action="query", prop="categories", titles=title)["query"]["pages"][0]["categories"]
    assert [c["title"] for c in placed] == ["Category:Pages with broken file links", "Category:Placed by template",
                                            "Category:Red things", "Category:Sweet things"]
    # a page already as asked: nothing is saved
    again = call(bot_server, "update-page-categories", title=title, add=["Sweet things"], remove=["Everyday fruits"])
    assert not again.is_error and again.blocks[0].startswith("No change: the page already is as asked")
    assert len(revision_ids(wiki, title)) == 2
    # a page without categories gets them at its end, a blank line apart
    bare = "Category edit bare test"
    create(bot_server, bare, "Just text.")
    assert not call(bot_server, "update-page-categories", title=bare, add=["Everyday fruits", "Red things"]).is_error
    assert wiki.wikitext(bare) == "Just text.\n\n[[Category:Everyday fruits]]\n[[Category:Red things]]"


def test_a_templates_includeonly_category_is_named_as_the_using_pages_not_as_missing(bot_server: Any,
                                                                                     wiki: RealWiki) -> None:
    """A category link inside a template's <includeonly> puts the pages that use the template in
    the category, not the template: asked to remove it, the answer says so and how to change it."""
    title = "Template:Category includeonly test"
    text = "A river box.<includeonly>[[Category:Boxed rivers]]</includeonly><noinclude>[[Category:Boxes]]</noinclude>"
    revid = create(bot_server, title, text)
    result = call(bot_server, "update-page-categories", title=title, remove=["Boxed rivers"])
    assert not result.is_error and result.blocks[0].startswith("No change: "), result.text
    assert field(result, "Not removed") == (
        "Category:Boxed rivers (in <includeonly>, so it puts the pages that use the template in the category, "
        "not this page: to take them out, change that link in the template's wikitext with update-page)")
    assert "not on the page" not in result.text and revision_ids(wiki, title) == [revid]


def test_a_category_is_added_with_the_sort_key_given_after_a_pipe(bot_server: Any, wiki: RealWiki) -> None:
    """"Rivers|Wendle" adds [[Category:Rivers|Wendle]], sorted under Wendle; a category goes
    whatever its sort key, with or without one given."""
    title = "Category sort key test"
    create(bot_server, title, "The Wendle is a river.\n\n[[Category:Wendle catchment|Old key]]")
    saved = call(bot_server, "update-page-categories", title=title, add=["Category:Rivers|Wendle"],
                 remove=["Wendle catchment"])
    assert not saved.is_error, saved.text
    assert field(saved, "Added") == "Category:Rivers" and field(saved, "Removed") == "Category:Wendle catchment"
    assert wiki.wikitext(title) == "The Wendle is a river.\n\n[[Category:Rivers|Wendle]]"
    placed = wiki.raw_get(action="query", prop="categories", clprop="sortkey", titles=title)["query"]["pages"][0]
    assert [(c["title"], c["sortkeyprefix"]) for c in placed["categories"]] == [("Category:Rivers", "Wendle")]
    removed = call(bot_server, "update-page-categories", title=title, remove=["Rivers|Another key"])
    assert not removed.is_error and field(removed, "Removed") == "Category:Rivers", removed.text
    assert wiki.wikitext(title) == "The Wendle is a river."
    # a category the page is in already takes the sort key given; given again, nothing changes
    call(bot_server, "update-page-categories", title=title, add=["Rivers"])
    resorted = call(bot_server, "update-page-categories", title=title, add=["Rivers|Wendle"])
    assert not resorted.is_error and field(resorted, "Sort key set") == "Category:Rivers (Wendle)", resorted.text
    assert wiki.wikitext(title) == "The Wendle is a river.\n\n[[Category:Rivers|Wendle]]"
    again = call(bot_server, "update-page-categories", title=title, add=["Rivers|Wendle"])
    assert again.blocks[0].startswith("No change: ") and field(again, "Already in") == "Category:Rivers"
    bad = call(bot_server, "update-page-categories", title=title, add=["Rivers|[[Wendle]]"])
    assert bad.is_error and bad.blocks[0].startswith("invalid_input: add holds "), bad.text


def test_categories_of_a_redirect_say_they_are_the_redirect_pages_own(bot_server: Any, wiki: RealWiki, farm: WikiFarm,
                                                                      german_wiki: RealWiki) -> None:
    """get-page shows a redirect's target under the redirect's title: an answer that changed the
    redirect page's categories says so, lest the model take them for the article's."""
    title, target = "Category redirect test", "Category redirect target test"
    create(bot_server, target, "The article.")
    create(bot_server, title, f"#REDIRECT [[{target}]]")
    dry = call(bot_server, "update-page-categories", title=title, add=["Redirects from moves"], dryRun=True)
    saved = call(bot_server, "update-page-categories", title=title, add=["Redirects from moves"])
    line = (f"Redirect: {title} is a redirect to {target}; these are the categories of the redirect page itself, "
            "not of the page it leads to")
    assert not saved.is_error and saved.blocks[0].endswith("\nCategories: Category:Redirects from moves\n" + line)
    assert line in dry.text.split("\n"), dry.text
    assert wiki.wikitext(title) == f"#REDIRECT [[{target}]]\n\n[[Category:Redirects from moves]]"
    assert wiki.wikitext(target) == "The article."
    german = shared_bot_server(farm, german_wiki)
    create(german, "Weiterleitungsziel", "Der Artikel.")
    create(german, "Weiterleitung mit Kategorie", "#WEITERLEITUNG [[Weiterleitungsziel]]")
    local = call(german, "update-page-categories", title="Weiterleitung mit Kategorie", add=["Weiterleitungen"])
    assert not local.is_error and field(local, "Redirect").startswith(
        "Weiterleitung mit Kategorie is a redirect to Weiterleitungsziel; "), local.text
    plain = call(bot_server, "update-page-categories", title=target, add=["Redirect targets"])
    assert not plain.is_error and "\nRedirect: " not in plain.text, plain.text


def test_categories_change_on_the_base_revision_and_merge_edits_made_since(bot_server: Any,
                                                                          wiki: RealWiki) -> None:
    title = "Category base test"
    base = create(bot_server, title, "First line.\n\nSecond line.\n\n[[Category:Everyday fruits]]")
    editor_edit(wiki, title, "First line, by the Editor.\n\nSecond line.\n\n[[Category:Everyday fruits]]")
    result = call(bot_server, "update-page-categories", title=title, remove=["Everyday fruits"], add=["Everyday citrus"],
                  latestId=base)
    assert not result.is_error and result.blocks[0].startswith("Saved, merged with the edits made since revision")
    assert wiki.wikitext(title) == "First line, by the Editor.\n\nSecond line.\n\n[[Category:Everyday citrus]]"
    foreign = call(bot_server, "update-page-categories", title=title, add=["Everyday fruits"], latestId=revision_ids(
        wiki, "Apple")[0])
    assert foreign.is_error and foreign.blocks[0].startswith("invalid_input: latestId ")
    missing = call(bot_server, "update-page-categories", title="Category base missing test", add=["Everyday fruits"])
    assert missing.is_error and missing.blocks[0].startswith("not_found: ")


# -- talk pages --------------------------------------------------------------------------

@on_every_version
@pytest.mark.parametrize("style", [":", "*"])
def test_a_reply_goes_under_the_comment_answered_after_its_replies(bot_server: Any, wiki: RealWiki,
                                                                   style: str) -> None:
    title = f"Reply placement test {'colon' if style == ':' else 'bullet'}"
    text = threaded_talk(style)
    revid = create(bot_server, f"Talk:{title}", text)
    replies = {"by author and time": "Bob, 11:00, 1 March 2026", "by first words": "I agree; Saturday"}
    for how, reply_to in replies.items():
        dry = call(bot_server, "reply-on-talk-page", title=title, topic="Plans", replyTo=reply_to,
                   message="Saturday it is.", dryRun=True)
        assert not dry.is_error, (how, dry.text)
        assert (f"@@ -6,0 +7 @@\n+{style}{style}Saturday it is. [[User:Admin|Admin]] ([[User talk:Admin|talk]]) "
                in dry.text), (how, dry.text)  # signed as the save signs it
        assert field(dry, "Reply to") == "Bob, 11:00, 1 March 2026 (UTC)"
    assert revision_ids(wiki, f"Talk:{title}") == [revid]
    saved = call(bot_server, "reply-on-talk-page", title=title, topic="1", replyTo="i agree",
                 message="Saturday it is.\nI will bring a cake.")
    assert not saved.is_error and saved.blocks[0].startswith("Saved.\nTitle: Talk:" + title), saved.text
    assert field(saved, "Topic") == "1 (Plans)"
    lines = wiki.wikitext(f"Talk:{title}").split("\n")
    assert lines[6] == f"{style}{style}Saturday it is."
    assert re.fullmatch(re.escape(f"{style}{style}I will bring a cake. [[User:Admin|Admin]] "
                                  "([[User talk:Admin|talk]]) ") + r"\d\d:\d\d, .* \(UTC\)", lines[7])
    assert lines[8] == f"{style}Sunday is better for me. {signature('Dave', '13:00')}"
    assert latest_revision(wiki, f"Talk:{title}")["comment"] == "/* Plans */ reply (via mediawiki-mcp)"
    # without replyTo: at the end of the topic, one level below its first comment
    end = call(bot_server, "reply-on-talk-page", title=title, topic="Plans", message="See you there.")
    assert not end.is_error and field(end, "Reply to") == "Alice, 10:00, 1 March 2026 (UTC)"
    lines = wiki.wikitext(f"Talk:{title}").split("\n")
    assert lines[9].startswith(f"{style}See you there. [[User:Admin|Admin]]") and lines[10] == ""
    assert "\n".join(lines[11:]) == f"== Other ==\nSomething else. {signature('Eve', '14:00')}"


def test_a_reply_in_paragraphs_says_its_blank_lines_went(bot_server: Any, wiki: RealWiki) -> None:
    """A blank line between a reply's paragraphs would end its indentation, so it goes, as
    MediaWiki's reply tool drops it: each paragraph is an indented line. The answer says so."""
    title = "Reply paragraphs test"
    create(bot_server, f"Talk:{title}", threaded_talk(":"))
    message = "First paragraph.\n\nSecond paragraph.\n\n\nThird."
    saved = call(bot_server, "reply-on-talk-page", title=title, topic="Other", message=message)
    assert not saved.is_error, saved.text
    assert field(saved, "Paragraphs") == (
        "each is a line of its own at the reply's indentation, the blank lines between them left out, as "
        "MediaWiki's reply tool writes them: a blank line would end the indentation")
    assert "\n:First paragraph.\n:Second paragraph.\n:Third. [[User:Admin|Admin]]" in wiki.wikitext(f"Talk:{title}")
    one = call(bot_server, "reply-on-talk-page", title=title, topic="Other", message="One line.\nAnother.")
    assert not one.is_error and "Paragraphs:" not in one.text, one.text


@on_every_version
def test_a_reply_names_nothing_outside_its_topic_as_removed(bot_server: Any, wiki: RealWiki) -> None:
    """A reply changes its topic alone: the talk page's header template and category above it and
    the other topic's template stay, and neither the dry run nor the save names them as removed."""
    title = "Reply removes nothing test"
    talk = ("{{Talk header}}\n[[Category:Talk pages tested]]\n\n"
            + threaded_talk(":").replace("Something else.", "Something else, see {{Cite note}}."))
    create(bot_server, f"Talk:{title}", talk)
    for dry_run in (True, False):
        result = call(bot_server, "reply-on-talk-page", title=title, topic="Plans", message="Count me in.",
                      dryRun=dry_run)
        assert not result.is_error and "Removed:" not in result.text, result.text
    text = wiki.wikitext(f"Talk:{title}")
    assert text.startswith("{{Talk header}}\n[[Category:Talk pages tested]]") and "{{Cite note}}" in text
    assert ":Count me in. [[User:Admin|Admin]]" in text


@on_every_version
def test_a_reply_at_the_end_of_the_last_topic_goes_above_the_links_that_close_the_page(
        bot_server: Any, wiki: RealWiki) -> None:
    """The talk page ends with its category, below the last topic's comments: a reply at that
    topic's end goes above it, as an append does; a new topic goes at the very end, as
    DiscussionTools adds one."""
    title = "Reply closing links test"
    closing = "[[Category:Archived talk]]\n[[Category:Talk pages tested]]"
    create(bot_server, f"Talk:{title}", threaded_talk(":") + f"\n\n{closing}")
    for dry_run in (True, False):
        replied = call(bot_server, "reply-on-talk-page", title=title, topic="Other", message="Agreed.",
                       dryRun=dry_run)
        assert not replied.is_error and "Removed:" not in replied.text, replied.text
    text = wiki.wikitext(f"Talk:{title}")
    assert re.search(re.escape(f"Something else. {signature('Eve', '14:00')}\n:Agreed. [[User:Admin|Admin]] ")
                     + r".*\(UTC\)\n\n" + re.escape(closing) + "$", text), text
    added = call(bot_server, "add-talk-topic", title=title, heading="Later", message="A new topic.")
    assert not added.is_error, added.text
    assert wiki.wikitext(f"Talk:{title}").startswith(text + "\n\n== Later ==\n\nA new topic.")


@on_every_version
@pytest.mark.parametrize("inside, replies, expected", [
    ("* plates\n* cups", "", ":"),
    (": plates, as last year\n: cups", f"*Napkins too. {signature('Bob', '11:00')}\n", "*"),
], ids=["a bulleted list", "an indented quote"])
def test_a_reply_takes_its_style_from_the_replies_not_from_a_list_inside_a_comment(
        bot_server: Any, wiki: RealWiki, inside: str, replies: str, expected: str) -> None:
    """A list or an indented quote inside the topic's first comment is no reply: a reply to the
    topic is indented as its replies are, else by ':'; a '*' after a bulleted list would make it
    the list's next item."""
    title = f"Reply style inside a comment test {expected}"
    talk = f"== Picnic ==\nWhat we need:\n{inside} {signature('Alice', '10:00')}\n{replies}"
    create(bot_server, f"Talk:{title}", talk)
    result = call(bot_server, "reply-on-talk-page", title=title, topic="Picnic", message="Agreed.")
    assert not result.is_error, result.text
    last = wiki.wikitext(f"Talk:{title}").split("\n")[-1]
    assert last.startswith(f"{expected}Agreed. [[User:Admin|Admin]]"), last


def test_a_reply_names_what_it_cannot_find(bot_server: Any, wiki: RealWiki) -> None:
    title = "Reply not found test"
    create(bot_server, f"Talk:{title}", threaded_talk(":") + f"\n\n== Plans ==\nAgain. {signature('Zoe', '15:00')}")
    topic = call(bot_server, "reply-on-talk-page", title=title, topic="Holidays", message="Hi.")
    assert topic.is_error and topic.blocks[0].startswith(f"not_found: 'Talk:{title}' on {wiki.key} has no topic "
                                                         "'Holidays'. Its topics: 1 (Plans), 2 (Other), 3 (Plans).")
    twice = call(bot_server, "reply-on-talk-page", title=title, topic="Plans", message="Hi.")
    assert twice.is_error and "2 topics of" in twice.text and "sections 1, 3" in twice.text
    comment = call(bot_server, "reply-on-talk-page", title=title, topic="1", replyTo="Frank", message="Hi.")
    assert comment.is_error and comment.blocks[0].startswith("not_found: No comment in topic 1 (Plans)")
    assert "Bob, 11:00, 1 March 2026 (UTC): I agree; Saturday?;" in comment.text
    many = call(bot_server, "reply-on-talk-page", title=title, topic="1", replyTo="S", message="Hi.")
    assert many.is_error and many.blocks[0].startswith("invalid_input: replyTo matches 2 comments")
    missing = call(bot_server, "reply-on-talk-page", title="Reply missing talk test", topic="1", message="Hi.")
    assert missing.is_error and missing.blocks[0].startswith("not_found: ")
    assert len(revision_ids(wiki, f"Talk:{title}")) == 1


@on_every_version
@pytest.mark.parametrize("overlap", [False, True])
def test_a_reply_to_a_page_changed_meanwhile_is_merged_or_a_conflict(wiki: RealWiki, overlap: bool) -> None:
    """The reply is based on the revision it read: an edit made before it is saved is merged by
    MediaWiki when it does not touch the same lines, and is a conflict, never overwritten, when
    it does (here: another reply in the same place)."""
    title = f"Talk:Reply race test {overlap}"
    create(bot_server_for(wiki), title, threaded_talk(":"))
    proxy = HoldingProxy(wiki.url, b"rvprop=ids%7Ccontent")
    try:
        server = make_server(wiki.env(MEDIAWIKI_URL=proxy.api))
        answer: list[Result] = []
        replying = threading.Thread(target=lambda: answer.append(call(
            server, "reply-on-talk-page", title=title, topic="Plans", replyTo="Bob, 11:00, 1 March 2026",
            message="Saturday it is.")))
        replying.start()
        assert proxy.arrived[b"rvprop=ids%7Ccontent"].wait(30)
        theirs = (threaded_talk(":").replace(":Sunday", "::Or Sunday? Unsigned.\n:Sunday") if overlap
                  else threaded_talk(":") + "\n:Agreed. Unsigned.")
        editor_edit(wiki, title, theirs)
        proxy.released[b"rvprop=ids%7Ccontent"].set()
        replying.join(60)
    finally:
        proxy.close()
    result, now = answer[0], wiki.wikitext(title)
    if overlap:
        assert result.is_error and result.blocks[0].startswith("conflict: "), result.text
        assert now == theirs
    else:
        assert not result.is_error and result.blocks[0].startswith("Saved, merged with "), result.text
        assert now.startswith(theirs.split("\n:Sunday")[0] + "\n::Saturday it is. [[User:Admin|Admin]]")
        assert now.endswith("\n:Agreed. Unsigned.")


@on_every_version
def test_a_topic_goes_on_the_talk_page_of_the_title_given(bot_server: Any, wiki: RealWiki) -> None:
    subject = "Talk topic subject test"
    create(bot_server, subject, "A subject page.")
    dry = call(bot_server, "add-talk-topic", title=subject, heading="Colour", message="Red or green?", dryRun=True)
    assert not dry.is_error and field(dry, "Title") == f"Talk:{subject}", dry.text
    assert "@@ -0,0 +1,3 @@\n+== Colour ==\n+\n+Red or green? [[User:Admin|Admin]] " in dry.blocks[0], dry.text
    assert revision_ids(wiki, f"Talk:{subject}") == []
    made = call(bot_server, "add-talk-topic", title=subject, heading="Colour", message="Red or green?")
    assert not made.is_error and made.blocks[0].startswith(f"Created.\nTitle: Talk:{subject}\n"), made.text
    more = call(bot_server, "add-talk-topic", title=f"Talk:{subject}", heading="Size", message="Big? ~~~~")
    assert not more.is_error and more.blocks[0].startswith(f"Saved.\nTitle: Talk:{subject}\n"), more.text
    text = wiki.wikitext(f"Talk:{subject}")
    assert re.fullmatch(r"== Colour ==\n\nRed or green\? \[\[User:Admin\|Admin\]\] \(\[\[User talk:Admin\|talk\]\]\) "
                        r"[^\n]+ \(UTC\)\n\n== Size ==\n\nBig\? \[\[User:Admin\|Admin\]\][^\n]+\(UTC\)", text), text
    assert latest_revision(wiki, f"Talk:{subject}")["comment"] == "/* Size */ new section (via mediawiki-mcp)"
    user = call(bot_server, "add-talk-topic", title="User:Editor", heading="Hello", message="Welcome.")
    assert not user.is_error and field(user, "Title") == "User talk:Editor"


def test_talk_tools_given_a_redirect_name_the_target_s_talk_page(bot_server: Any, wiki: RealWiki) -> None:
    """get-page shows a redirect's target under its title, and the target's talk page is where
    that page is discussed: a redirect's own talk page, missing, is not made or sought silently."""
    target, redirect = f"Talk redirect target {secrets.token_hex(4)}", f"Talk redirect {secrets.token_hex(4)}"
    create(bot_server, target, "The page.")
    create(bot_server, redirect, f"#REDIRECT [[{target}]]")
    assert not call(bot_server, "add-talk-topic", title=target, heading="Plans", message="We plan.").is_error
    reply = call(bot_server, "reply-on-talk-page", title=redirect, topic="Plans", message="Agreed.")
    assert reply.is_error and reply.text.startswith(f"not_found: Page 'Talk:{redirect}' does not exist"), reply.text
    assert f"Its subject page is a redirect to {target!r}, whose talk page is 'Talk:{target}'." in reply.text
    topic = call(bot_server, "add-talk-topic", title=redirect, heading="Sizes", message="Big?")
    assert topic.is_error and topic.text.startswith(f"invalid_input: Nothing was saved: {redirect!r} is a "
                                                    f"redirect to {target!r}"), topic.text
    assert f'title="{target}"' in topic.text
    assert revision_ids(wiki, f"Talk:{redirect}") == [] and "Sizes" not in wiki.wikitext(f"Talk:{target}")
    asked = call(bot_server, "add-talk-topic", title=f"Talk:{redirect}", heading="Sizes", message="Big?")
    assert not asked.is_error and field(asked, "Title") == f"Talk:{redirect}", asked.text


def test_talk_tools_know_a_topic_by_its_heading_as_get_page_sections_shows_it(bot_server: Any, wiki: RealWiki) -> None:
    title = f"Talk:Topic headings with markup {secrets.token_hex(4)}"
    create(bot_server, title, f"== Plans for [[Main Page|the main page]] ==\nWe plan. {signature('Alice', '10:00')}\n"
                              f"== ''Italic'' topic ==\nText. {signature('Bob', '11:00')}")
    shown = call(bot_server, "get-page-sections", title=title).text
    assert "| == Plans for the main page == |" in shown and "| == Italic topic == |" in shown, shown
    reply = call(bot_server, "reply-on-talk-page", title=title, topic="Plans for the main page", message="Agreed.")
    assert not reply.is_error and field(reply, "Topic") == "1 (Plans for [[Main Page|the main page]])", reply.text
    lines = wiki.wikitext(title).split("\n")
    assert lines[2].startswith(":Agreed. [[User:Admin|Admin]]") and lines[4] == "== ''Italic'' topic ==", lines
    again = call(bot_server, "add-talk-topic", title=title, heading="Italic topic", message="Why italic?", dryRun=True)
    assert "already had a topic headed \"''Italic'' topic\" (section 2)" in again.text, again.text


def test_a_reply_to_a_topic_by_number_goes_to_the_topic_read_as_that_number(wiki: RealWiki) -> None:
    """Old topics are archived from the top of a talk page: the topic read as 2 is 1 by the time
    the reply is saved, and the reply goes there, not to the topic now numbered 2."""
    server = make_server(wiki.env())
    title = f"Talk:Reply after archiving {secrets.token_hex(4)}"
    kept = f"== Plans ==\nPlan. {signature('Bob', '11:00')}\n== Later ==\nLater. {signature('Carol', '12:00')}"
    create(bot_server_for(wiki), title, f"== Old ==\nOld. {signature('Alice', '10:00')}\n{kept}")
    assert "\n== Plans ==\n" in call(server, "get-page", title=title).text  # topic 2 as read
    editor_edit(wiki, title, kept)  # the first topic archived
    reply = call(server, "reply-on-talk-page", title=title, topic=2, message="About the plans.")
    assert not reply.is_error and field(reply, "Topic") == "1 (Plans)", reply.text
    lines = wiki.wikitext(title).split("\n")
    assert lines[2].startswith(":About the plans. [[User:Admin|Admin]]") and lines[4] == "== Later ==", lines
    # two topics headed alike: which one the number meant is not told by its heading; nothing is
    # saved until the page is read again
    title = f"Talk:Reply after archiving twins {secrets.token_hex(4)}"
    kept = f"== Plans ==\nOne. {signature('Bob', '11:00')}\n== Plans ==\nTwo. {signature('Carol', '12:00')}"
    create(bot_server_for(wiki), title, f"== Old ==\nOld. {signature('Alice', '10:00')}\n{kept}")
    assert not call(server, "get-page", title=title).is_error
    editor_edit(wiki, title, kept)
    refused = call(server, "reply-on-talk-page", title=title, topic=2, message="About plan one.")
    assert refused.is_error and "Read the page again with get-page" in refused.text, refused.text
    assert wiki.wikitext(title) == kept


def test_a_reply_takes_its_topic_by_number_or_heading_with_markup_and_goes_after_the_subsections(
        bot_server: Any, wiki: RealWiki) -> None:
    """Topics as get-page-sections numbers and shows them; a reply to no comment in particular goes
    at the topic's end, below its subsections; the lead is no topic."""
    title = "Talk:Reply topic by number test"
    text = (f"Intro.\n\n== Plans ==\nWe should plan. {signature('Alice', '10:00')}\n:Agreed. {signature('Bob', '11:00')}"
            f"\n\n=== Food ===\nCake? {signature('Carol', '12:00')}\n\n== Other ==\nElse. {signature('Eve', '14:00')}")
    revid = create(bot_server, title, text)
    by_number = call(bot_server, "reply-on-talk-page", title=title, topic=1, message="See you there.")
    assert not by_number.is_error and field(by_number, "Topic") == "1 (Plans)", by_number.text
    lines = wiki.wikitext(title).split("\n")
    assert lines[:8] == text.split("\n")[:8] and lines[8].startswith(":See you there. [[User:Admin|Admin]]")
    assert "\n".join(lines[9:]) == f"\n== Other ==\nElse. {signature('Eve', '14:00')}"
    marked = call(bot_server, "reply-on-talk-page", title=title, topic="== Other ==", message="Indeed.")
    assert not marked.is_error and field(marked, "Topic") == "3 (Other)", marked.text
    assert wiki.wikitext(title).split("\n")[-1].startswith(":Indeed. [[User:Admin|Admin]]")
    for lead in (0, "0"):
        refused = call(bot_server, "reply-on-talk-page", title=title, topic=lead, message="Hi.")
        assert refused.blocks == [
            (f"invalid_input: Topic 0 is the lead of {title!r}, the text above its first heading, which is no "
             "topic; nothing was saved. Its topics: 1 (Plans), 2 (Food), 3 (Other). To start one, use "
             "add-talk-topic.")], refused.text
    assert len(revision_ids(wiki, title)) == 3 and revision_ids(wiki, title)[-1] == revid


def test_a_new_topic_takes_a_heading_with_its_markup_and_warns_of_one_already_there(
        bot_server: Any, wiki: RealWiki) -> None:
    subject = "Talk topic heading markup test"
    dry = call(bot_server, "add-talk-topic", title=subject, heading="== Budget ==", message="How much?", dryRun=True)
    assert "@@ -0,0 +1,3 @@\n+== Budget ==\n+\n+How much? [[User:Admin|Admin]] " in dry.blocks[0], dry.text
    made = call(bot_server, "add-talk-topic", title=subject, heading="== Budget ==", message="How much?")
    assert not made.is_error and "Note" not in made.text, made.text
    assert wiki.wikitext(f"Talk:{subject}").startswith("== Budget ==\n\nHow much? [[User:Admin|Admin]]")
    assert latest_revision(wiki, f"Talk:{subject}")["comment"] == "/* Budget */ new section (via mediawiki-mcp)"
    inside = call(bot_server, "add-talk-topic", title=subject, heading="Costs", message="Two parts:\n== Rent ==\nHigh.")
    assert inside.blocks == [
        (f"invalid_input: The message holds a heading (== Rent ==), which would split it into a topic of its own "
         f"on 'Talk:{subject}'; nothing was saved. Give the message without it, or start each topic with "
         "add-talk-topic.")], inside.text
    again = call(bot_server, "add-talk-topic", title=subject, heading="budget", message="Still: how much?")
    assert not again.is_error and again.blocks[0].startswith("Saved."), again.text
    assert field(again, "Note") == (f"'Talk:{subject}' already had a topic headed 'Budget' (section 1); this is "
                                    "section 2. To answer a topic, use reply-on-talk-page.")
    assert [line for line in wiki.wikitext(f"Talk:{subject}").split("\n") if line.startswith("==")] == [
        "== Budget ==", "== budget =="]


def test_reply_to_names_a_comment_by_its_author_as_signed_or_shown_its_time_or_an_ip(bot_server: Any) -> None:
    title = "Reply by author test"
    create(bot_server, f"Talk:{title}", (
        f"== Picnic ==\nLet us plan. {signature('Alice', '10:00')}\n"
        ":Sounds good. [[User:Dave|Davey]] ([[User talk:Dave|talk]]) 11:00, 1 March 2026 (UTC)\n"
        "::Carol's unsigned idea: a lake.\n"
        f":What about Sunday? {signature('Dave', '12:00')}\n"
        ":An IP speaks. [[Special:Contributions/192.0.2.7|192.0.2.7]] 13:00, 1 March 2026 (UTC)"))
    answered = {"Alice": "Alice, 10:00", "User:Alice": "Alice, 10:00", "Davey": "Dave, 11:00",
                "12:00, 1 March 2026": "Dave, 12:00", "192.0.2.7": "192.0.2.7, 13:00",
                "What about Sunday": "Dave, 12:00"}
    for reply_to, author in answered.items():
        dry = call(bot_server, "reply-on-talk-page", title=title, topic="Picnic", replyTo=reply_to, message="Yes.",
                   dryRun=True)
        assert not dry.is_error and field(dry, "Reply to") == f"{author}, 1 March 2026 (UTC)", (reply_to, dry.text)
    several = call(bot_server, "reply-on-talk-page", title=title, topic="Picnic", replyTo="Dave", message="Yes.")
    assert several.blocks[0].startswith("invalid_input: replyTo matches 2 comments in topic 1 (Picnic)"), several.text
    unsigned = call(bot_server, "reply-on-talk-page", title=title, topic="Picnic", replyTo="Carol's unsigned",
                    message="Yes.")
    assert unsigned.blocks[0].startswith("not_found: No comment in topic 1 (Picnic)"), unsigned.text
    assert "Dave, 12:00, 1 March 2026 (UTC): What about Sunday?;" in unsigned.text


def test_an_ip_signature_on_a_german_wiki_is_a_comment(farm: WikiFarm, german_wiki: RealWiki) -> None:
    server = shared_bot_server(farm, german_wiki)
    create(server, "Diskussion:IP-Unterschrift", "== Frage ==\nWer war das? [[Spezial:Beiträge/192.0.2.8|192.0.2.8]] "
                                                "13:00, 1. Mär. 2026 (UTC)")
    dry = call(server, "reply-on-talk-page", title="Diskussion:IP-Unterschrift", topic="Frage", replyTo="192.0.2.8",
               message="Ich.", dryRun=True)
    assert not dry.is_error and field(dry, "Reply to") == "192.0.2.8, 13:00, 1. Mär. 2026 (UTC)", dry.text


def test_talk_summaries_on_a_german_wiki_are_in_german(german_wiki: RealWiki) -> None:
    """A new topic's summary is the wiki's own message in its language; a reply's, where the wiki
    has no word for it (DiscussionTools has), the link to its topic alone. The messages are
    asked for once, not at every write."""
    server = make_server(german_wiki.env())
    counter = RequestCounter(server)
    talk = "Diskussion:Zusammenfassung auf Deutsch"
    topic = call(server, "add-talk-topic", title=talk, heading="Farbe", message="Rot oder gelb?")
    assert not topic.is_error, topic.text
    assert latest_revision(german_wiki, talk)["comment"] == "Neuer Abschnitt /* Farbe */ (via mediawiki-mcp)"
    more = call(server, "add-talk-topic", title=talk, heading="Größe", message="Groß?")
    assert not more.is_error, more.text
    assert latest_revision(german_wiki, talk)["comment"] == "Neuer Abschnitt /* Größe */ (via mediawiki-mcp)"
    reply = call(server, "reply-on-talk-page", title=talk, topic="Farbe", message="Rot.")
    assert not reply.is_error, reply.text
    assert latest_revision(german_wiki, talk)["comment"] == "/* Farbe */ (via mediawiki-mcp)"
    assert len([url for url in counter.urls if "allmessages" in url]) == 1, counter.urls


def test_categories_and_talk_pages_of_a_german_wiki_by_its_own_and_english_names(
        farm: WikiFarm, german_wiki: RealWiki) -> None:
    """A German wiki writes Kategorie: and Benutzer: and signs in German; the English names
    (Category:, User:) work there too, as Image: does for files."""
    server = shared_bot_server(farm, german_wiki)
    text = ("Eine Kirsche ist Obst.\n[[Bild:Kirsche.png|mini|Ein Bild]]\n[[Category:Frucht|Kirsche, rot]]\n"
            "[[Kategorie:Rot]]")
    create(server, "Kirsche", text)
    saved = call(server, "update-page-categories", title="Kirsche", remove=["Kategorie:Frucht"], add=["Steinobst"])
    assert not saved.is_error, saved.text
    assert german_wiki.wikitext("Kirsche") == ("Eine Kirsche ist Obst.\n[[Bild:Kirsche.png|mini|Ein Bild]]\n"
                                               "[[Kategorie:Rot]]\n[[Kategorie:Steinobst]]")
    assert field(saved, "Removed") == "Kategorie:Frucht"
    assert field(saved, "Categories") == "Kategorie:Rot, Kategorie:Seiten mit defekten Dateilinks, Kategorie:Steinobst"
    topic = call(server, "add-talk-topic", title="Kirsche", heading="Farbe", message="Rot oder gelb?")
    assert not topic.is_error and field(topic, "Title") == "Diskussion:Kirsche", topic.text
    signed = german_wiki.wikitext("Diskussion:Kirsche").split("\n")[-1]
    assert re.fullmatch(r"Rot oder gelb\? \[\[Benutzer:Admin\|Admin\]\] \(\[\[Benutzer Diskussion:Admin\|"
                        r"Diskussion\]\]\) (\d\d:\d\d, .*) \(\w+\)", signed), signed
    when = re.search(r"\d\d:\d\d, [^(]*", signed).group().strip()  # type: ignore[union-attr]
    reply = call(server, "reply-on-talk-page", title="Talk:Kirsche", topic="Farbe", replyTo=f"Admin {when}",
                 message="Rot.")
    assert not reply.is_error and field(reply, "Reply to").startswith(f"Admin, {when}"), reply.text
    assert german_wiki.wikitext("Diskussion:Kirsche").split("\n")[-1].startswith(":Rot. [[Benutzer:Admin|Admin]]")


# -- replace-in-pages --------------------------------------------------------------------

def replace_pages(server: Any, prefix: str, count: int, category: str | None = None) -> list[str]:
    """``count`` pages that name Acme Widget twice, in ``category`` if given."""
    titles = [f"{prefix} {n:02d}" for n in range(1, count + 1)]
    for n, title in enumerate(titles, 1):
        create(server, title, f"Acme Widget, page {n}.\n\nMade by Acme Widget Ltd."
               + (f"\n[[Category:{category}]]" if category else ""))
    return titles


def test_a_replace_across_a_category_previews_then_saves_and_skips_a_page_changed_since(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    titles = replace_pages(bot_server_for(wiki), "Replace category test", 12, "Replace test pages")
    before = {title: revision_ids(wiki, title) for title in titles}
    arguments = {"find": "Acme Widget", "replace": "Acme Gadget", "category": "Replace test pages"}
    preview = call(server, "replace-in-pages", **arguments)  # a dry run unless told otherwise
    assert not preview.is_error, preview.text
    assert preview.blocks[0].startswith("Dry run: nothing was saved. 12 of 12 pages would change (24 replacements).")
    for n, title in enumerate(titles, 1):
        assert (f"{title} | 2 replacements | base revision ID {before[title][0]}\n@@ -1 +1 @@\n"
                f"~Acme [-Widget-]{{+Gadget+}}, page {n}.\n@@ -3 +3 @@\n"
                "~Made by Acme [-Widget-]{+Gadget+} Ltd.") in preview.text
    assert {title: revision_ids(wiki, title) for title in titles} == before
    theirs = "Acme Widget, page 5, as the Editor wrote it.\n\nMade by Acme Widget Ltd.\n[[Category:Replace test pages]]"
    editor_edit(wiki, titles[4], theirs)
    reports: list[tuple[float, float | None, str | None]] = []

    async def record(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    async def go() -> Any:
        async with Client(server) as client:
            return await client.call_tool("replace-in-pages", {**arguments, "dryRun": False,
                                                               "comment": "Acme renamed its widget"},
                                          progress_callback=record)
    result = anyio.run(go)
    assert not result.is_error, result.content
    text = result.content[0].text
    assert text.startswith("Saved 11 of 12 pages.\npage | outcome | revision ID, or why\n")
    rows = text.split("\n")[2:]
    assert rows[4] == (f"{titles[4]} | skipped | changed since the preview (revision {before[titles[4]][0]}, now "
                       f"{revision_ids(wiki, titles[4])[0]}); nothing was saved: preview it again")
    assert wiki.wikitext(titles[4]) == theirs
    for n, title in enumerate(titles, 1):
        if n != 5:
            assert rows[n - 1] == f"{title} | saved | {revision_ids(wiki, title)[0]}"
            assert wiki.wikitext(title).startswith(f"Acme Gadget, page {n}.\n\nMade by Acme Gadget Ltd.")
            assert latest_revision(wiki, title)["comment"] == "Acme renamed its widget (via mediawiki-mcp)"
    assert [(p, t) for p, t, _ in reports] == [(n, 12) for n in range(1, 13)]
    assert reports[-1][2] == rows[-1]
    # the same save again: each saved page says so, nothing is saved twice
    again = call(server, "replace-in-pages", **arguments, dryRun=False)
    assert again.blocks[0].startswith("Saved 0 of 12 pages."), again.text
    assert f"{titles[0]} | unchanged | saved by this change before, as revision {revision_ids(wiki, titles[0])[0]}" \
        in again.text


def test_a_replace_retried_with_the_same_key_saves_nothing_twice(bot_server: Any, wiki: RealWiki) -> None:
    titles = replace_pages(bot_server, "Replace retry test", 3)
    arguments = {"find": "Acme Widget", "replace": "Acme Widget Pro", "titles": [*titles, "Replace retry missing"],
                 "dryRun": False, "idempotencyKey": "replace-req-1"}
    first = call(bot_server, "replace-in-pages", **arguments)
    assert not first.is_error and first.blocks[0].startswith("Saved 3 of 4 pages."), first.text
    assert "Replace retry missing | skipped | does not exist" in first.text
    after = {title: revision_ids(wiki, title) for title in titles}
    second = call(bot_server, "replace-in-pages", **arguments)
    assert not second.is_error and second.blocks[0] == REPEAT_NOTE + first.blocks[0]
    assert {title: revision_ids(wiki, title) for title in titles} == after
    assert wiki.wikitext(titles[0]) == "Acme Widget Pro, page 1.\n\nMade by Acme Widget Pro Ltd."
    other = call(bot_server, "replace-in-pages", **{**arguments, "replace": "Acme Widget Max"})
    assert other.is_error and other.blocks[0].startswith("conflict: idempotencyKey 'replace-req-1' was already used")


def test_a_replace_skips_a_special_page_saying_it_cannot_be_edited(bot_server: Any, wiki: RealWiki) -> None:
    """A special page holds no wikitext: it is skipped as one, not reported as having no match."""
    titles = replace_pages(bot_server, "Replace special test", 1)
    arguments = {"find": "Acme Widget", "replace": "Acme Gadget", "titles": [*titles, "Special:Random"]}
    preview = call(bot_server, "replace-in-pages", **arguments)
    assert not preview.is_error and "Skipped: Special:Random (a special page, which cannot be edited)" \
        in preview.blocks[0].split("\n"), preview.text
    assert "no match" not in preview.text
    saved = call(bot_server, "replace-in-pages", **arguments, dryRun=False)
    assert saved.blocks[0].startswith("Saved 1 of 2 pages."), saved.text
    assert "Special:Random | skipped | a special page, which cannot be edited" in saved.blocks[0].split("\n")
    assert wiki.wikitext(titles[0]).startswith("Acme Gadget, page 1.")


def test_a_replace_in_a_redirect_without_a_match_names_the_page_it_leads_to(bot_server: Any, wiki: RealWiki) -> None:
    """get-page shows a redirect's target under its title; a replace reads the redirect's own text."""
    titles = replace_pages(bot_server, "Replace redirect test", 1)
    redirect = f"Replace redirect {secrets.token_hex(4)}"
    create(bot_server, redirect, f"#REDIRECT [[{titles[0]}]]")
    arguments = {"find": "Acme Widget", "replace": "Acme Gadget", "titles": [redirect]}
    preview = call(bot_server, "replace-in-pages", **arguments)
    said = f'a redirect to "{titles[0]}", whose own text has no match; to change that page, pass "{titles[0]}"'
    assert not preview.is_error and f"Skipped: {redirect} ({said})" in preview.blocks[0].split("\n"), preview.text
    assert "no match)" not in preview.text.replace(said, "")
    saved = call(bot_server, "replace-in-pages", **arguments, dryRun=False)
    assert f"{redirect} | skipped | {said}" in saved.blocks[0].split("\n"), saved.text
    assert wiki.wikitext(titles[0]).startswith("Acme Widget, page 1.")
    # a redirect whose own text has the match is changed, as asked
    fixed = call(bot_server, "replace-in-pages", titles=[redirect], find=titles[0], replace="Apple", dryRun=False)
    assert not fixed.is_error and wiki.wikitext(redirect) == "#REDIRECT [[Apple]]", fixed.text


def test_a_replace_by_regular_expression_with_groups(bot_server: Any, wiki: RealWiki) -> None:
    titles = replace_pages(bot_server, "Replace regex test", 2)
    result = call(bot_server, "replace-in-pages", titles=titles, find=r"page (\d+)", replace=r"sheet \1",
                  regex=True, dryRun=False)
    assert not result.is_error and result.blocks[0].startswith("Saved 2 of 2 pages."), result.text
    assert wiki.wikitext(titles[1]) == "Acme Widget, sheet 2.\n\nMade by Acme Widget Ltd."
    for find, replace in ((r"page (\d+", "x"), (r"page (\d+)", r"\2")):
        bad = call(bot_server, "replace-in-pages", titles=titles, find=find, replace=replace, regex=True)
        assert bad.is_error and bad.blocks[0].startswith("invalid_input: find or replace is not a valid regular")


def test_a_replace_by_a_backtracking_regular_expression_is_stopped_and_the_connection_answers_on(
        wiki: RealWiki) -> None:
    """(a+)+$ on a run of a's then b backtracks for as long as 2**n steps, holding the whole server
    (Python holds every thread while a pattern runs): the preview and the save stop it as find-in-page
    does, and the next call on the same connection is answered. 27 a's keep the test bounded in time
    where the pattern is not stopped (it then finishes, unstopped, in some seconds)."""
    title = "Replace backtracking test"
    text = "a" * 27 + "b"
    create(bot_server_for(wiki), title, text)
    before = revision_ids(wiki, title)
    server = make_server(wiki.env())
    server.state.regex_seconds = 1.0
    arguments = {"titles": [title], "find": "(a+)+$", "replace": "x", "regex": True}

    async def go() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool("replace-in-pages", arguments),
                    await client.call_tool("replace-in-pages", {**arguments, "dryRun": False}),
                    await client.call_tool("get-page", {"title": title})]
    preview, save, read = anyio.run(go)
    for result in (preview, save):
        assert result.is_error and result.content[0].text.startswith(
            "invalid_input: The regular expression ran over 1 s on this page without finishing"), result.content
    assert not read.is_error and read.content[0].text.endswith(text), read.content
    assert revision_ids(wiki, title) == before and wiki.wikitext(title) == text


def test_a_regex_replacement_takes_dollar_groups_and_counts_no_empty_match(bot_server: Any, wiki: RealWiki) -> None:
    """$1 and ${name}, as JavaScript and PCRE write a group, were put in literally; a pattern that
    matches empty text counted a replacement between every two characters, where find-in-page
    shows no match there."""
    title = "Replace dollar test"
    create(bot_server, title, "A widget costs 5 dollars.")
    saved = call(bot_server, "replace-in-pages", titles=[title], find=r"costs (?P<n>\d+) dollars",
                 replace="costs ${n} euros ($1, not $5)", regex=True, dryRun=False)
    assert not saved.is_error, saved.text
    assert wiki.wikitext(title) == "A widget costs 5 euros (5, not $5).", saved.text
    found = call(bot_server, "find-in-page", title=title, find="e*", regex=True)
    preview = call(bot_server, "replace-in-pages", titles=[title], find="e*", replace="E", regex=True)
    assert not preview.is_error and f"{title} | 2 replacements | " in preview.text, preview.text
    assert "\n~A [-widget-]{+widgEt+} costs 5 [-euros-]{+Euros+} (5, not $5)." in preview.text, preview.text
    assert found.text.count(" | line 1 | ") == 2, found.text


@pytest.mark.parametrize("find, replace", [("(unclosed", "x"), (r"(\d+) dollars", r"\2 euros")])
def test_an_invalid_regular_expression_is_refused_whichever_pages_are_named(
        bot_server: Any, wiki: RealWiki, find: str, replace: str) -> None:
    """A pattern or replacement that cannot run is refused as such, also when no page named has text
    to run it on: the preview said only that the page does not exist, and the same call on a page
    that does was refused."""
    missing = call(bot_server, "replace-in-pages", titles=["Replace no such page anywhere"], find=find,
                   replace=replace, regex=True)
    assert missing.is_error and missing.blocks[0].startswith(
        "invalid_input: find or replace is not a valid regular expression here: "), missing.text
    existing = call(bot_server, "replace-in-pages", titles=["Apple"], find=find, replace=replace, regex=True)
    assert existing.blocks == missing.blocks


def test_a_replace_preview_in_which_no_page_changes_names_no_call_to_save(bot_server: Any, wiki: RealWiki) -> None:
    """No page matches: the preview says there is nothing to save, where it sent the model to a call
    with dryRun=false that could only save nothing."""
    preview = call(bot_server, "replace-in-pages", titles=["Apple", "Replace no such page either"],
                   find="No such words in any fruit", replace="x")
    assert not preview.is_error and preview.blocks[0].startswith(
        "Dry run: nothing was saved. 0 of 2 pages would change (0 replacements). There is nothing to save.\n"
        "Unchanged (no match): Apple\nSkipped: Replace no such page either (does not exist)"), preview.text
    assert "dryRun" not in preview.text


def test_a_replace_refuses_a_category_over_the_cap_and_cuts_a_long_preview(wiki: RealWiki) -> None:
    capped = make_server(wiki.env())
    capped.state.pages_per_call = 3  # Category:Fruits has more members than that
    over = call(capped, "replace-in-pages", find="fruit", replace="Fruit", category="Fruits")
    assert over.is_error and over.blocks[0].startswith("invalid_input: Category:Fruits has more than 3 member pages")
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))
    titles = [f"Replace long preview test {n}" for n in range(1, 4)]
    for title in titles:
        create(bot_server_for(wiki), title, "\n".join(f"Line {k} of Acme Widget's long story." for k in range(12)))
    preview = call(server, "replace-in-pages", find="Acme Widget", replace="Acme Gadget", titles=titles)
    assert not preview.is_error and len(preview.blocks) == 2, preview.text
    assert titles[0] + " | 12 replacements" in preview.blocks[0] and titles[1] not in preview.blocks[0]
    assert re.fullmatch(r"Content truncated at \d+ of \d+ bytes\. To review the diffs of Replace long preview "
                        r"test 2, Replace long preview test 3, call replace-in-pages again with "
                        r'titles=\["Replace long preview test 2", "Replace long preview test 3"\]\.',
                        preview.blocks[1]), preview.blocks[1]


FAKE_TOKENS = {"query": {"tokens": {"csrftoken": "+\\"}}}


def fake_pages(*titles: str) -> dict[str, Any]:
    return {"batchcomplete": True, "query": {"pages": [
        {"pageid": n, "ns": 0, "title": title, "revisions": [{"revid": 10 + n, "slots": {"main": {
            "content": "Acme Widget."}}}]} for n, title in enumerate(titles, 1)]}}


@pytest.mark.parametrize("refusal", ["ratelimited", "maxlag"])
def test_a_replace_stops_when_the_wiki_throttles_and_says_what_was_saved(fake: FakeWiki, refusal: str) -> None:
    """A rate limit, or a lagged database past the retry budget, stops the replace: the pages
    saved are listed, the rest named with the call that saves them, and nothing is sent again."""
    sleeps: list[float] = []
    saved = {"edit": {"result": "Success", "title": "A", "pageid": 1, "oldrevid": 11, "newrevid": 21}}
    refused = Reply(body={"errors": [{"code": refusal, "text": "Slow down."}]},
                    headers={"Retry-After": "1"} if refusal == "maxlag" else {})
    throttled = [dataclasses.replace(refused, headers=dict(refused.headers))
                 for _ in range(MAX_ATTEMPTS if refusal == "maxlag" else 1)]
    fake.replies = [Reply(body=fake_pages("A", "B", "C")), Reply(body=FAKE_TOKENS), Reply(body=saved), *throttled]
    server = fake_server(fake, sleeps, MEDIAWIKI_READ_ONLY="false")
    result = call(server, "replace-in-pages", titles=["A", "B", "C"], find="Widget", replace="Gadget", dryRun=False)
    assert not result.is_error, result.text
    assert result.blocks[0] == (
        f"Stopped early: rate_limited: Slow down. ({fake.api.split('/')[2]}) [{refusal}] Wait a minute before "
        "retrying.\nSaved 1 of 3 pages. Not saved: B, C. To save them, wait a minute, then call replace-in-pages "
        'again with titles=["B", "C"] and dryRun=false.\npage | outcome | revision ID, or why\nA | saved | 21\n'
        f"B | failed | rate_limited: Slow down. ({fake.api.split('/')[2]}) [{refusal}] Wait a minute before "
        "retrying.\nC | not attempted")
    edits = [s["params"] for s in fake.requests_to_api() if s["params"].get("action") == "edit"]
    assert [e["title"] for e in edits] == ["A", *["B"] * len(throttled)]
    assert all(e["baserevid"] == str(10 + "ABC".index(e["title"]) + 1) and e["maxlag"] == "5" for e in edits)
    assert sleeps == [1.0] * (len(throttled) - 1)
    if refusal == "ratelimited":  # throttled before any page was saved: the call fails, and can be retried
        fake.replies = [Reply(body=fake_pages("A", "B")), dataclasses.replace(refused)]
        result = call(server, "replace-in-pages", titles=["A", "B"], find="Widget", replace="Gadget",
                      dryRun=False, idempotencyKey="throttled-first")
        assert result.is_error and result.blocks[0].startswith("rate_limited: Slow down."), result.text


def test_steady_state_requests_per_everyday_edit_tool(wiki: RealWiki) -> None:
    """HTTP requests per call once login, site info, the edit token and the wiki's extensions
    are cached (the closing notes quote this table): a save reads the page, sends the edit and
    reads the sizes of the new revision and its parent; replace-in-pages reads all its pages in
    one request and then sends one edit per page that changes, without reading sizes. A talk
    tool's dry run asks the wiki once more, to show its signature as the save expands it (the
    pre-save transform), where a plain edit's text holds nothing to expand."""
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    create(bot_server_for(wiki), "Talk:Requests everyday test", threaded_talk(":"))
    create(server, "Requests everyday test", "Text.\n[[Category:Everyday fruits]]")  # caches the token
    call(server, "reply-on-talk-page", title="Requests everyday test", topic="Other", replyTo="Something",
         message="Warm.")  # the first reply to a comment asks the wiki whether it has DiscussionTools
    titles = replace_pages(bot_server_for(wiki), "Requests replace test", 5)
    calls = [
        ("update-page-categories", {"title": "Requests everyday test", "add": ["Everyday citrus"], "dryRun": True}, 1),
        ("update-page-categories", {"title": "Requests everyday test", "add": ["Everyday citrus"], "remove": ["Everyday fruits"]}, 3),
        ("update-page-categories", {"title": "Requests everyday test", "add": ["Everyday citrus"]}, 1),
        ("add-talk-topic", {"title": "Requests everyday test", "heading": "H", "message": "M", "dryRun": True}, 2),
        ("add-talk-topic", {"title": "Requests everyday test", "heading": "H", "message": "M"}, 3),
        ("reply-on-talk-page", {"title": "Requests everyday test", "topic": "Plans", "replyTo": "I agree",
                                "message": "R", "dryRun": True}, 2),
        ("reply-on-talk-page", {"title": "Requests everyday test", "topic": "Plans", "replyTo": "I agree",
                                "message": "R"}, 3),
        ("replace-in-pages", {"titles": titles, "find": "Acme", "replace": "ACME"}, 1),
        ("replace-in-pages", {"titles": titles, "find": "Acme", "replace": "ACME", "dryRun": False}, 6),
    ]
    assert_requests_per_call(server, counter, calls)
