"""Tests: The editor's safety net on the real wiki: undo, rollback, contributions, logs, protection and the watchlist."""
from __future__ import annotations

import datetime
import json
import re
import secrets
from typing import Any

import pytest
import requests

from mediawiki_mcp.errors import NEXT_STEP
from mediawiki_mcp.read_links import RC_LEGEND
from realwiki import (
    RealWiki,
    WikiFarm,
    php,
)
from tests.support import (
    WRITABLE_NOWHERE,
    Accounts,
    DroppingProxy,
    RequestCounter,
    assert_requests_per_call,
    bare_login,
    bot_server_for,
    call,
    content_of,
    create,
    editor_edit,
    field,
    follow_markers,
    good_then_bad,
    latest_revision,
    list_tools,
    make_server,
    on_every_version,
    posts,
    revision_ids,
    rows_of,
    shared_bot_server,
    utc_now,
)

SAFETY_TOOLS = {  # name: (readOnlyHint, destructiveHint, idempotentHint)
    "undo-edit": (False, True, False), "rollback-edits": (False, True, True),
    "get-user-contributions": (True, False, True), "get-log-events": (True, False, True),
    "protect-page": (False, True, True), "get-watchlist": (True, False, True), "watch-page": (False, True, True)}


def admin_session(wiki: RealWiki) -> requests.Session:
    """A bare API session of the bot account, for what only a logged-in account can read."""
    if wiki.api not in _admin_sessions:
        _admin_sessions[wiki.api] = bare_login(wiki, wiki.bot_user, wiki.bot_password)[0]
    return _admin_sessions[wiki.api]


_admin_sessions: dict[str, requests.Session] = {}


def watched(wiki: RealWiki, title: str) -> bool:
    """Whether the bot account watches the page, as the wiki says."""
    page = admin_session(wiki).get(wiki.api, timeout=30, params={
        "action": "query", "titles": title, "prop": "info", "inprop": "watched", "format": "json",
        "formatversion": "2"}).json()["query"]["pages"][0]
    return bool(page.get("watched"))


def protection_of(wiki: RealWiki, title: str) -> dict[str, tuple[str, str]]:
    page = wiki.raw_get(action="query", titles=title, prop="info", inprop="protection")["query"]["pages"][0]
    return {p["type"]: (p["level"], p["expiry"]) for p in page["protection"]}


def test_the_safety_net_tools_are_offered_annotated_and_small(bot_server: Any, anon_server: Any) -> None:
    tools = {t.name: t for t in list_tools(bot_server)}
    for name, hints in SAFETY_TOOLS.items():
        a = tools[name].annotations
        assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint) == (*hints, True), name
        size = len(json.dumps(tools[name].model_dump(mode="json", by_alias=True, exclude_none=True),
                              separators=(",", ":"), ensure_ascii=False).encode())
        assert size <= 1500, (name, size)  # tools/list is paid on every turn
    # without an account there is no watchlist: neither tool is listed
    anonymous = {t.name for t in list_tools(anon_server)}
    assert {"get-user-contributions", "get-log-events"} <= anonymous
    assert not {"get-watchlist", "watch-page"} & anonymous
    for name in ("create-page", "update-page", "move-page", "undo-edit", "rollback-edits"):
        assert tools[name].input_schema["properties"]["watch"]["enum"] == ["watch", "unwatch", "preferences",
                                                                            "nochange"], name


# -- undo-edit ------------------------------------------------------------------------

@on_every_version
def test_undo_edit_undoes_another_accounts_edit_and_keeps_a_later_one(bot_server: Any, wiki: RealWiki) -> None:
    title = "Safety undo test"
    create(bot_server, title, "Line one.\nLine two.\nLine three.\nLine four.")
    editor_edit(wiki, title, "Line one.\nLine two, vandalised.\nLine three.\nLine four.")
    bad = revision_ids(wiki, title)[0]
    assert not call(bot_server, "update-page", title=title, find="Line four.", replace="Line four, later.").is_error
    later = revision_ids(wiki, title)[0]
    dry = call(bot_server, "undo-edit", revisionId=bad, dryRun=True)
    assert dry.blocks == [("Dry run: nothing was saved. The diff that would be saved:\n"
                           f"Title: {title}\nBase revision ID: {later}\n\n"
                           "@@ -2 +2 @@\n~Line two[-, vandalised-].")], dry.text
    assert revision_ids(wiki, title)[0] == later
    undone = call(bot_server, "undo-edit", revisionId=bad)
    assert not undone.is_error, undone.text
    assert undone.blocks[0].startswith(f"Undid revision {bad} by Editor; the edits made since are kept.\n"
                                       f"Title: {title}\nRevision ID: ")
    assert field(undone, "Previous revision ID") == str(later)
    assert field(undone, "Size change").startswith("-12 bytes")
    assert wiki.wikitext(title) == "Line one.\nLine two.\nLine three.\nLine four, later."
    revision = latest_revision(wiki, title)
    assert revision["user"] == "Admin" and "mw-undo" in revision["tags"]
    # MediaWiki's own summary, which links the revision from 1.43 on
    assert re.match(rf"Undo revision ({bad}|\[\[Special:Diff/{bad}\|{bad}\]\]) by ", revision["comment"]), revision


@on_every_version
def test_a_page_read_then_an_undo_then_the_text_read_written_back_keeps_the_undo(wiki: RealWiki) -> None:
    """The model reads the page, undoes a vandal's edit, then writes back the text it read with a
    change of its own: the wiki made the undo's text, which the model never read, so the write is
    based on the revision read, and the vandal's line stays out."""
    server = make_server(wiki.env())
    title = "Safety undo then write test"
    text = "Lead line from 1900.\n\nFirst middle line.\n\nSecond middle line.\n\nBottom line."
    create(bot_server_for(wiki), title, text)
    editor_edit(wiki, title, text.replace("Bottom line.", "A vandal's line.\n\nBottom line."))
    bad = revision_ids(wiki, title)[0]
    seen = content_of(call(server, "get-page", title=title).blocks[0])
    undone = call(server, "undo-edit", revisionId=bad)
    assert not undone.is_error, undone.text
    done = call(server, "update-page", title=title, source=seen.replace("1900", "1901"))
    assert not done.is_error, done.text
    assert wiki.wikitext(title) == text.replace("1900", "1901")


def test_undo_edit_undoes_a_run_of_edits_once_per_idempotency_key(bot_server: Any, wiki: RealWiki) -> None:
    title = "Safety undo run test"
    create(bot_server, title, "One.\nTwo.\nThree.\nFour.\nFive.")
    editor_edit(wiki, title, "One.\nTwo!\nThree.\nFour.\nFive.")
    editor_edit(wiki, title, "One.\nTwo!\nThree!\nFour.\nFive.")
    newest, oldest = revision_ids(wiki, title)[:2]
    assert not call(bot_server, "update-page", title=title, find="Five.", replace="Five, kept.").is_error
    arguments = {"revisionId": newest, "oldestRevisionId": oldest, "comment": "Undo the run",
                 "idempotencyKey": "safety-undo-run"}
    first = call(bot_server, "undo-edit", **arguments)
    assert not first.is_error, first.text
    assert first.blocks[0].startswith(f"Undid revisions {oldest} to {newest} by Editor; the edits made since are "
                                      "kept.")
    again = call(bot_server, "undo-edit", **arguments)
    assert again.blocks[0].startswith("Repeat: ")
    assert wiki.wikitext(title) == "One.\nTwo.\nThree.\nFour.\nFive, kept."
    assert len(revision_ids(wiki, title)) == 5
    assert latest_revision(wiki, title)["comment"] == "Undo the run (via mediawiki-mcp)"


def test_undoing_a_run_names_every_author_before_and_after_and_in_its_summary(bot_server: Any, wiki: RealWiki) -> None:
    title = "Safety undo run authors test"
    create(bot_server, title, "One.\nTwo.\nThree.")
    assert not call(bot_server, "update-page", title=title, find="One.", replace="One!").is_error
    editor_edit(wiki, title, "One!\nTwo, a good edit.\nThree.")
    assert not call(bot_server, "update-page", title=title, find="Three.", replace="Three!").is_error
    newest, _, oldest = revision_ids(wiki, title)[:3]
    dry = call(bot_server, "undo-edit", revisionId=newest, oldestRevisionId=oldest, dryRun=True)
    assert dry.blocks[0] == f"This would undo revisions {oldest} to {newest} by Admin and Editor."
    assert dry.blocks[1].startswith("Dry run: nothing was saved.") and revision_ids(wiki, title)[0] == newest
    undone = call(bot_server, "undo-edit", revisionId=newest, oldestRevisionId=oldest)
    assert undone.blocks[0].startswith(f"Undid revisions {oldest} to {newest} by Admin and Editor.\n"), undone.text
    assert wiki.wikitext(title) == "One.\nTwo.\nThree."
    assert latest_revision(wiki, title)["comment"] == (f"Undo revisions {oldest} to {newest} by Admin and Editor "
                                                       "(via mediawiki-mcp)")


@on_every_version
def test_an_undo_whose_lines_changed_since_is_a_conflict_and_saves_nothing(bot_server: Any, wiki: RealWiki) -> None:
    title = "Safety undo conflict test"
    first = create(bot_server, title, "Alpha.\nBeta.\nGamma.")
    editor_edit(wiki, title, "Alpha.\nBeta, by the editor.\nGamma.")
    bad = revision_ids(wiki, title)[0]
    assert not call(bot_server, "update-page", title=title, find="Beta, by the editor.",
                    replace="Beta, corrected.").is_error
    latest = revision_ids(wiki, title)[0]
    for dry_run in (True, False):
        result = call(bot_server, "undo-edit", revisionId=bad, dryRun=dry_run)
        assert result.is_error and result.blocks == [
            (f"conflict: Revision {bad} of {title!r} cannot be undone cleanly: the edits made since (revision "
             f"{latest} by Admin) changed the same lines. Nothing was saved. To undo it by hand, compare-pages "
             f"with fromRevision={first} and toRevision={bad} shows what it changed; then update-page with find "
             "and replace changes that back in the current text.")], result.text
    assert revision_ids(wiki, title)[0] == latest and wiki.wikitext(title) == "Alpha.\nBeta, corrected.\nGamma."


def test_undo_edit_refuses_a_pages_creation_and_runs_not_of_one_page(bot_server: Any, wiki: RealWiki) -> None:
    title = "Safety undo creation test"
    first = create(bot_server, title, "Text.")
    refused = call(bot_server, "undo-edit", revisionId=first)
    assert refused.is_error and refused.blocks == [
        (f"invalid_input: Revision {first} created {title!r}, so undoing it would leave nothing; nothing was "
         "saved. To remove the page, use delete-page.")]
    other = create(bot_server, "Safety undo other page", "Other.")
    mixed = call(bot_server, "undo-edit", revisionId=other, oldestRevisionId=first)
    assert mixed.is_error and mixed.blocks == [
        (f"invalid_input: Revisions {first} and {other} are of different pages ({title!r} and 'Safety undo other "
         "page'); a run to undo is of one page. Nothing was saved.")]
    missing = call(bot_server, "undo-edit", revisionId=10**8)
    assert missing.is_error and missing.blocks[0].startswith(f"not_found: Revision {10**8} not found on {wiki.key}.")
    assert revision_ids(wiki, title) == [first]


# -- rollback-edits -----------------------------------------------------------------------

@on_every_version
def test_rollback_reverts_three_edits_by_the_last_editor_once_confirmed(bot_server: Any, wiki: RealWiki) -> None:
    title = "Safety rollback test"
    base, bad = good_then_bad(bot_server, wiki, title, 3)
    asked = call(bot_server, "rollback-edits", title=title, user="Editor")
    assert asked.is_error and asked.blocks == [
        (f"invalid_input: Nothing was rolled back. rollback-edits would revert the 3 latest edits to {title!r}, "
         f"all by Editor (revisions {bad[2]} to {bad[0]}), returning it to revision {base} by Admin. Ask the "
         "user to confirm, then call rollback-edits again with confirm=true.")]
    assert revision_ids(wiki, title)[:3] == bad
    done = call(bot_server, "rollback-edits", title=title, user="editor", confirm=True)
    assert not done.is_error, done.text
    assert done.blocks[0].startswith(f"Rolled back the 3 latest edits to {title!r}, all by Editor (revisions "
                                     f"{bad[2]} to {bad[0]}), to revision {base}.\nTitle: {title}\n")
    assert field(done, "Previous revision ID") == str(bad[0]) and field(done, "Size change").startswith("-1 bytes")
    assert wiki.wikitext(title) == "Good text." and "mw-rollback" in latest_revision(wiki, title)["tags"]
    # the latest editor is now Admin: nothing of Editor's is left to roll back
    for arguments in ({}, {"confirm": True}):
        again = call(bot_server, "rollback-edits", title=title, user="Editor", **arguments)
        assert again.is_error and again.blocks[0].startswith("conflict: "), again.text
        assert "undo-edit" in again.text
    assert len(revision_ids(wiki, title)) == 5


def test_rollback_of_a_page_with_no_other_author_is_refused(bot_server: Any, wiki: RealWiki) -> None:
    title = "Safety rollback only author test"
    create(bot_server, title, "Mine.")
    call(bot_server, "update-page", title=title, source="Mine, twice.")
    result = call(bot_server, "rollback-edits", title=title, user="Admin")
    assert result.is_error and result.blocks == [
        (f"invalid_input: Every revision of {title!r} is by Admin, so rollback has no earlier version to return "
         "to; nothing was changed. To remove the page, use delete-page.")]


def test_rollback_takes_the_user_as_a_user_page_title_in_the_wikis_own_names(
        bot_server: Any, wiki: RealWiki, farm: WikiFarm, german_wiki: RealWiki) -> None:
    title = "Rollback user page title test"
    create(bot_server, title, "Good.")
    editor_edit(wiki, title, "Bad.")
    for user in ("User:Editor", "user: Editor"):
        preview = call(bot_server, "rollback-edits", title=title, user=user)
        assert preview.is_error and preview.blocks[0].startswith(
            f"invalid_input: Nothing was rolled back. rollback-edits would revert the latest edit to {title!r}, by "
            "Editor (revision "), (user, preview.text)
    german = shared_bot_server(farm, german_wiki)
    create(german, "Zurücksetzen Benutzerseite", "Meins.")
    for user in ("Benutzer:Admin", "Benutzerin:Admin", "User:Admin"):
        refused = call(german, "rollback-edits", title="Zurücksetzen Benutzerseite", user=user)
        assert refused.blocks == [
            ("invalid_input: Every revision of 'Zurücksetzen Benutzerseite' is by Admin, so rollback has no "
             "earlier version to return to; nothing was changed. To remove the page, use delete-page.")], (
            user, refused.text)
    assert wiki.wikitext(title) == "Bad."


@pytest.mark.wiki
def test_an_account_without_the_rollback_right_is_refused_and_pointed_to_undo(
        accounts: Accounts, bot_server: Any, wiki: RealWiki) -> None:
    title = "Safety rollback refused test"
    create(bot_server, title, "Good.")
    editor_edit(wiki, title, "Bad.")
    plain = call(make_server(accounts.plain), "rollback-edits", title=title, user="Editor", confirm=True)
    assert plain.is_error and plain.blocks == [
        (f"permission_denied: The account Plain cannot roll back edits on {wiki.key}: it lacks the 'rollback' "
         "right, which the wiki gives to: sysop. Nothing was changed. Without it, undo-edit reverts the same "
         "edits: revisionId the latest, oldestRevisionId the first of the run.")]
    limited = call(make_server(accounts.limited), "rollback-edits", title=title, user="Editor")
    assert limited.is_error and limited.blocks[0].startswith(
        f"permission_denied: The account Admin cannot roll back edits on {wiki.key}: the bot password "
        "Admin@limited lacks the grant 'Rollback changes to pages'")
    assert wiki.wikitext(title) == "Bad."


# -- get-user-contributions ------------------------------------------------------------------

@pytest.mark.wiki
@on_every_version
def test_contributions_across_two_pages_walked_to_the_end(bot_server: Any, wiki: RealWiki) -> None:
    password = "Contributor-" + secrets.token_hex(12)
    php(wiki.directory, "maintenance/createAndPromote.php", "Contributor", password)
    session, token = bare_login(wiki, "Contributor", password)
    made = []
    for title, text, summary, minor in [("Safety contributions A", "A.", "Start A", False),
                                        ("Safety contributions B", "B.", "Start B", False),
                                        ("Safety contributions A", "A, more.", "minor", True),
                                        ("Talk:Safety contributions B", "Talk.", "Talk: B", False)]:
        edit = session.post(wiki.api, timeout=30, data={
            "action": "edit", "title": title, "text": text, "summary": summary, "token": token,
            "minor" if minor else "notminor": "1", "format": "json", "formatversion": "2"}).json()["edit"]
        made.append((title, edit["newrevid"]))
    editor_edit(wiki, "Safety contributions A", "A, edited since.")  # Contributor's A edit is no longer latest
    results = follow_markers(bot_server, "get-user-contributions", "continueFrom",
                             {"user": "Contributor", "limit": 1})
    assert len(results) == 4 and all(len(r.blocks[0].split("\n")) == 2 for r in results)
    assert results[0].blocks[0].startswith(
        "Edits by Contributor, newest first (revision ID | timestamp | page | size change | new, minor, latest "
        "(only when so) | tags (only when any) | edit summary (quoted, only when any)):\n")
    rows = [rows_of(r.blocks[0])[0].split(" | ") for r in results]
    assert [(row[0], row[2]) for row in rows] == [(str(revid), title) for title, revid in made[::-1]]
    assert rows[0][3:] == ["+5", "new, latest", '"Talk: B"']
    assert rows[1][3:] == ["+6", "minor", '"minor"']
    assert rows[2][3:] == ["+2", "new, latest", '"Start B"']
    assert rows[3][3:] == ["+2", "new", '"Start A"']
    oldest_first = call(bot_server, "get-user-contributions", user="Contributor", oldestFirst=True,
                        namespaces=[0])
    assert oldest_first.blocks[0].startswith("Edits by Contributor, oldest first")
    assert [row.split(" | ")[0] for row in rows_of(oldest_first.blocks[0])] == [str(r) for _, r in made[:3]]
    nobody = call(bot_server, "get-user-contributions", user="Nobody here at all")
    assert nobody.is_error and nobody.blocks[0].startswith(
        f"not_found: There is no user 'Nobody here at all' on {wiki.key}.")


def test_contributions_of_an_ip_address_and_of_an_ip_range(bot_server: Any, wiki: RealWiki) -> None:
    title = "Safety anonymous contributions test"
    session = requests.Session()
    token = session.get(wiki.api, timeout=30, params={"action": "query", "meta": "tokens", "format": "json"}
                        ).json()["query"]["tokens"]["csrftoken"]
    done = session.post(wiki.api, timeout=30, data={"action": "edit", "title": title, "text": "By an IP.",
                                                     "token": token, "format": "json"}).json()
    revid = done["edit"]["newrevid"]
    for user in ("127.0.0.1", "127.0.0.0/24"):
        result = call(bot_server, "get-user-contributions", user=user)
        assert not result.is_error, result.text
        assert result.blocks[0].startswith(f"Edits by {user}, newest first")
        assert f"{revid} | " in result.text and f" | {title} | +9 | new, latest" in result.text


def test_an_ip_range_too_wide_for_the_wiki_is_the_models_to_narrow(bot_server: Any, wiki: RealWiki) -> None:
    wide = call(bot_server, "get-user-contributions", user="10.0.0.0/8")
    assert wide.blocks == [
        (f"invalid_input: IPv4 CIDR ranges broader than /16 are not accepted. ({wiki.key}) [cidrtoobroad] Narrow the "
        "range (a larger number after the /) to what the wiki accepts, or ask for several narrower ranges; only "
        "the wiki's operator can widen its limit.")], wide.text


# -- get-log-events ---------------------------------------------------------------------------

@on_every_version
def test_a_delete_a_move_and_a_protection_are_in_the_log_with_their_reasons(bot_server: Any, wiki: RealWiki) -> None:
    for name in ("delete", "move", "protect"):
        create(bot_server, f"Safety log {name} test", "Logged.")
    assert not call(bot_server, "delete-page", title="Safety log delete test", confirm=True,
                    comment="Reason to delete").is_error
    assert not call(bot_server, "move-page", fromTitle="Safety log move test", toTitle="Safety log moved test",
                    comment="Reason to move", leaveRedirect=False).is_error
    assert not call(bot_server, "protect-page", title="Safety log protect test", edit="sysop", move="sysop",
                    expiry="1 month", comment="Reason to protect", confirm=True).is_error
    found = {}
    for kind in ("delete", "move", "protect"):
        result = call(bot_server, "get-log-events", type=kind, title=f"Safety log {kind} test")
        assert not result.is_error, result.text
        assert result.blocks[0].startswith("Log events, newest first (time | type/action | user | page | details "
                                           "(only when any) | reason (quoted, only when any)):\n")
        (row,) = rows_of(result.blocks[0])
        found[kind] = row.split(" | ")[1:]
    suffix = " (via mediawiki-mcp)"
    assert found["delete"] == ["delete/delete", "Admin", "Safety log delete test", f'"Reason to delete{suffix}"']
    assert found["move"] == ["move/move", "Admin", "Safety log move test", "to Safety log moved test, no redirect",
                             f'"Reason to move{suffix}"']
    assert found["protect"][:3] == ["protect/protect", "Admin", "Safety log protect test"]
    assert re.fullmatch(r"edit=sysop until (\S+Z), move=sysop until \1", found["protect"][3]), found["protect"]
    assert found["protect"][4] == f'"Reason to protect{suffix}"'
    by_admin = follow_markers(bot_server, "get-log-events", "continueFrom",
                              {"user": "Admin", "title": "Safety log move test", "limit": 1})
    assert [rows_of(r.blocks[0])[0].split(" | ")[1] for r in by_admin] == ["move/move", "create/create"]
    unknown = call(bot_server, "get-log-events", type="vandalism")
    assert unknown.is_error and unknown.blocks[0].startswith("invalid_input: ")
    assert "block, " in unknown.text and "protect, " in unknown.text  # the wiki's own log types


def test_log_events_of_an_unknown_user_are_not_found_not_an_empty_log(bot_server: Any, wiki: RealWiki) -> None:
    nobody = call(bot_server, "get-log-events", user="Nobody here at all")
    assert nobody.is_error and nobody.blocks[0].startswith(
        f"not_found: There is no user 'Nobody here at all' on {wiki.key}.")
    admin = call(bot_server, "get-log-events", user="admin", type="create", limit=1)
    assert not admin.is_error, admin.text
    assert rows_of(admin.blocks[0])[0].split(" | ")[1:3] == ["create/create", "Admin"]


# -- protect-page and get-page's protection ------------------------------------------------------

@on_every_version
def test_protect_page_previews_then_sets_levels_and_keeps_the_others(bot_server: Any, wiki: RealWiki) -> None:
    title = "Safety protect test"
    create(bot_server, title, "Protect me.")
    moved = call(bot_server, "protect-page", title=title, move="sysop", confirm=True)
    assert moved.blocks == [(f"Protection changed.\nTitle: {title}\nProtection: move=sysop\n"
                             f"URL: {wiki.url}/wiki/Safety_protect_test")], moved.text
    asked = call(bot_server, "protect-page", title=title, edit="autoconfirmed", expiry="1 week")
    assert asked.is_error and asked.blocks == [
        (f"invalid_input: Nothing was changed. protect-page would change the protection of {title!r} on "
         f"{wiki.key}: edit: none -> autoconfirmed until 1 week; move: sysop (kept). Ask the user to confirm, "
         "then call protect-page again with confirm=true.")]
    assert protection_of(wiki, title) == {"move": ("sysop", "infinity")}
    done = call(bot_server, "protect-page", title=title, edit="autoconfirmed", expiry="1 week", confirm=True)
    assert not done.is_error, done.text
    levels = protection_of(wiki, title)
    until = levels["edit"][1]
    assert levels == {"edit": ("autoconfirmed", until), "move": ("sysop", "infinity")} and until > utc_now()
    assert field(done, "Protection") == f"edit=autoconfirmed until {until}, move=sysop"
    metadata = call(bot_server, "get-page", title=title, metadata=True, content="none")
    assert field(metadata, "Protection") == f"edit=autoconfirmed until {until}, move=sysop"
    cascade = call(bot_server, "protect-page", title=title, cascade=True, confirm=True)
    assert cascade.is_error and cascade.blocks[0].startswith(
        "invalid_input: cascade protects pages this one transcludes only at edit level sysop; ")
    lifted = call(bot_server, "protect-page", title=title, edit="all", move="all", confirm=True)
    assert field(lifted, "Protection") == "none" and protection_of(wiki, title) == {}
    plain = call(bot_server, "get-page", title=title, metadata=True, content="none")
    assert "Protection" not in plain.text


@pytest.mark.parametrize("expiry, says", [
    ("next tuesday-ish", "which {key} does not read as a time"),
    ("1 week}}{{PAGENAME", "which {key} does not read as a time"),
    ("yesterday", "which is in the past"),
    ("2001-01-01T00:00:00Z", "which is in the past"),
])
def test_protect_page_answers_the_wikis_refusal_of_an_expiry_as_the_models_to_fix(bot_server: Any, wiki: RealWiki,
                                                                                  expiry: str, says: str) -> None:
    """An expiry the wiki cannot read, or one in the past, is refused by the wiki itself when the
    protection is set (no request asks it beforehand), and answered as the model's to change; one
    with a character no time has is refused before anything is asked."""
    title = "Protect bad expiry test"
    if not revision_ids(wiki, title):
        create(bot_server, title, "Text.")
    result = call(bot_server, "protect-page", title=title, edit="sysop", expiry=expiry, confirm=True)
    assert result.blocks == [f"invalid_input: Argument 'expiry' is {expiry!r}, {says.format(key=wiki.key)}; "
                             "nothing was changed. Give a duration such as 1 week, "
                             + ("a time such as 2030-01-31T00:00:00Z" if "read" in says else "a later time")
                             + ", or infinite."], result.text
    page = wiki.raw_get(action="query", prop="info", inprop="protection", titles=title)["query"]["pages"][0]
    assert page["protection"] == []
    assert not call(bot_server, "protect-page", title=title, edit="sysop", expiry="2 weeks").blocks[0].startswith(
        "invalid_input: Argument 'expiry'")


def test_a_cascade_from_another_page_is_named_where_protection_is_shown(bot_server: Any, wiki: RealWiki) -> None:
    template, source = "Template:Safety cascaded test", "Safety cascade source test"
    create(bot_server, template, "Shown everywhere.")
    create(bot_server, source, "{{Safety cascaded test}}")
    assert not call(bot_server, "protect-page", title=source, edit="sysop", cascade=True, confirm=True).is_error
    imposed = (f"none; yet edit=sysop by the cascading protection of {source}, which only that page can lift")
    metadata = call(bot_server, "get-page", title=template, metadata=True, content="none")
    assert field(metadata, "Protection") == imposed, metadata.text
    asked = call(bot_server, "protect-page", title=template, move="sysop")
    assert asked.is_error and f"move: none -> sysop. It stays protected whatever is set: {imposed}." in asked.text
    done = call(bot_server, "protect-page", title=template, move="sysop", confirm=True)
    assert field(done, "Protection") == ("move=sysop; yet edit=sysop by the cascading protection of "
                                         f"{source}, which only that page can lift"), done.text
    lifted = call(bot_server, "protect-page", title=template, move="all", confirm=True)
    assert field(lifted, "Protection") == imposed
    assert protection_of(wiki, template) == {"edit": ("sysop", "infinity")}  # the cascade's alone


@pytest.mark.parametrize("arguments, message", [
    ({"edit": "everyone"}, "Argument 'edit' must be a protection level of "),
    ({"upload": "sysop"}, "cannot be protected against upload: "),
    ({"create": "sysop"}, "cannot be protected against create: "),
])
def test_protect_page_refuses_levels_and_kinds_the_page_cannot_have(
        bot_server: Any, wiki: RealWiki, arguments: dict[str, Any], message: str) -> None:
    title = "Safety protect refusals test"
    if not revision_ids(wiki, title):
        create(bot_server, title, "Text.")
    result = call(bot_server, "protect-page", title=title, confirm=True, **arguments)
    assert result.is_error and result.blocks[0].startswith("invalid_input: ") and message in result.text
    assert protection_of(wiki, title) == {}


def test_closed_sets_are_named_in_the_schema_and_checked_against_the_wikis_own_lists() -> None:
    """MediaWiki's own protection levels, log types and content models are named in tools/list, which
    sends no request (the wiki here is unreachable); no enum, so a wiki's own value can pass."""
    schemas = {t.name: t.input_schema["properties"] for t in list_tools(make_server(WRITABLE_NOWHERE))}
    said = {(tool, arg): schemas[tool][arg] for tool, arg in (
        ("protect-page", "edit"), ("get-log-events", "type"), ("create-page", "contentModel"),
        ("get-recent-changes", "start"))}
    assert [s["description"] for s in said.values()] == [
        "autoconfirmed, sysop; all lifts it.",
        "Log type: delete, move, protect, upload, block, rights, newusers, ...",
        "wikitext, javascript, css, json, text...; default: by namespace.",
        "Earliest time listed: ISO 8601 (UTC unless zoned), a date, today, yesterday or an age (3 days ago)."]
    assert not any("enum" in json.dumps(s) for s in said.values())


@on_every_version
def test_a_value_the_wiki_does_not_take_is_refused_with_its_list_before_sending(
        wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    title = f"Safety choices test {secrets.token_hex(4)}"
    create(server, title, "Text.")
    def takes(module: str, name: str) -> str:  # the values the wiki's paraminfo lists
        info = wiki.raw_get(action="paraminfo", modules=module)["paraminfo"]["modules"][0]
        return ", ".join(v for p in info["parameters"] if p["name"] == name for v in p["type"] if v)
    log_types, content_models = takes("query+logevents", "type"), takes("edit", "contentmodel")
    refusals = [
        ("protect-page", {"title": title, "edit": "semi", "confirm": True},
         (f"Argument 'edit' must be a protection level of {wiki.key}: autoconfirmed, sysop, or all to lift it; "
          "got 'semi'.")),
        ("get-log-events", {"type": "deletion"},
         f"{wiki.key} knows no log type 'deletion' (its log types: {log_types})."),
        ("create-page", {"title": f"Module:{title}", "source": "return {}", "contentModel": "lua"},
         f"Nothing was saved: {wiki.key} knows no content model 'lua' (its content models: {content_models}).")]
    assert "Scribunto" in content_models and "protect, " in log_types
    for tool, arguments, message in refusals:
        call(server, tool, **arguments)  # the wiki's lists, once
        with counter.counting() as sent:
            refused = call(server, tool, **arguments)
        assert refused.blocks == [f"invalid_input: {message}"] and sent == [0], (tool, refused.text, sent)
    assert protection_of(wiki, title) == {} and revision_ids(wiki, f"Module:{title}") == []
    with counter.counting() as sent:  # MediaWiki's own value: sent as it is
        deleted = call(server, "get-log-events", type="create", title=title)
    assert sent == [1] and rows_of(deleted.blocks[0])[0].split(" | ")[1:4] == ["create/create", "Admin", title]
    module = call(server, "create-page", title=f"Module:{title}", source="return {}", contentModel="Scribunto")
    assert not module.is_error, module.text  # the wiki's own content model
    page = wiki.raw_get(action="query", prop="info", titles=f"Module:{title}")["query"]["pages"][0]
    assert page["contentmodel"] == "Scribunto"


def test_protecting_a_missing_title_against_creation(bot_server: Any, wiki: RealWiki) -> None:
    title = "Safety protect missing title test"
    done = call(bot_server, "protect-page", title=title, create="sysop", confirm=True)
    assert not done.is_error, done.text
    assert field(done, "Protection") == "create=sysop" and protection_of(wiki, title) == {"create": ("sysop", "infinity")}
    created = call(make_server({"MEDIAWIKI_URL": wiki.api, "MEDIAWIKI_READ_ONLY": "false"}), "create-page",
                   title=title, source="Spam.")
    assert created.is_error and created.blocks[0].startswith("permission_denied: ")


def test_reading_a_title_protected_against_creation_says_so(bot_server: Any, wiki: RealWiki) -> None:
    title = "Create protected read test"
    assert not call(bot_server, "protect-page", title=title, create="sysop", expiry="1 week", confirm=True).is_error
    expiry = protection_of(wiki, title)["create"][1]
    said = f"It is protected against creation (create=sysop until {expiry})."
    for tool, arguments in (("get-page", {}), ("get-page", {"content": "html"}), ("find-in-page", {"find": "x"})):
        result = call(bot_server, tool, title=title, **arguments)
        assert result.is_error and result.blocks[0].startswith(f"not_found: Page '{title}' not found on "), result.text
        assert said in result.text, (tool, result.text)
    assert "against creation" not in call(bot_server, "get-page", title="Create open read test").text


# -- get-watchlist and watch-page ---------------------------------------------------------------

@on_every_version
def test_a_watched_pages_edit_is_in_the_watchlist(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    title = "Safety watched test"
    create(server, title, "Watch me.")
    assert call(server, "watch-page", title=title).blocks == [f"Watched.\nTitle: {title}"]
    assert watched(wiki, title)
    editor_edit(wiki, title, "Edited by the editor.")
    revid = revision_ids(wiki, title)[0]
    listed = call(server, "get-watchlist", user="Editor")
    assert listed.blocks[0].startswith(f"Changes to watched pages, newest first ({RC_LEGEND}):\n")
    assert any(row.split(" | ")[1:5] == [title, f"revision {revid}", "Editor", "+12"]
               for row in rows_of(listed.blocks[0])), listed.text
    assert call(server, "watch-page", title=title, unwatch=True).blocks == [f"Unwatched.\nTitle: {title}"]
    assert not watched(wiki, title)
    assert title not in call(server, "get-watchlist", user="Editor").text
    until = call(server, "watch-page", title=title, expiry="1 week")
    assert until.blocks[0].startswith(f"Watched.\nTitle: {title}\nUntil: ") and field(until, "Until") > utc_now()
    missing = call(server, "watch-page", title="Safety watched missing page")
    assert missing.blocks == ["Watched.\nTitle: Safety watched missing page (does not exist yet)"]


@on_every_version
def test_times_a_person_says_find_an_edit_made_now_in_every_list(wiki: RealWiki) -> None:
    """start and end as a person says them (an age, a day, a time without a zone) in the four lists
    that take them; every row's time is UTC and says so."""
    server = make_server(wiki.env())
    title = f"Safety times test {secrets.token_hex(4)}"
    create(server, title, "Made now.")
    assert not call(server, "watch-page", title=title).is_error
    editor_edit(wiki, title, "Edited now.")
    revid = revision_ids(wiki, title)[0]
    hour_ago = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1))
    # each list, its arguments, and the columns of its rows that hold the time and the title
    lists = [("get-recent-changes", {"limit": 500}, 0, 1), ("get-watchlist", {"limit": 500}, 0, 1),
             ("get-user-contributions", {"user": "Editor"}, 1, 2), ("get-log-events", {"title": title}, 0, 3)]
    for start in ("24 hours ago", "1 week ago", "yesterday", hour_ago.strftime("%Y-%m-%dT%H:%M"),
                  hour_ago.strftime("%Y-%m-%d")):
        for tool, arguments, when, page in lists:
            result = call(server, tool, start=start, **arguments)
            assert not result.is_error, (tool, start, result.text)
            rows = [row.split(" | ") for row in rows_of(result.blocks[0])]
            assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r[when]) for r in rows), (tool, rows)
            if tool == "get-log-events":  # the page's creation is logged
                assert [r[1:4] for r in rows] == [["create/create", "Admin", title]], (start, rows)
            else:
                assert any(r[page] == title and str(revid) in " | ".join(r) for r in rows), (tool, start, rows)
    # Named days are the edit's own, also when the run crosses midnight (UTC) after the edit.
    edited = datetime.date.fromisoformat(wiki.raw_get(action="query", prop="revisions", revids=revid)
                                         ["query"]["pages"][0]["revisions"][0]["timestamp"][:10])
    same_day = edited == datetime.datetime.now(datetime.timezone.utc).date()
    day, day_before = ("today", "yesterday") if same_day else (str(edited), str(edited - datetime.timedelta(1)))
    today = call(server, "get-recent-changes", start=day, end=day, limit=500)
    assert f"revision {revid}" in today.text, today.text  # the end of a day is the day's last second
    for end in ("2 hours ago", "1 hour ago", day_before):  # an age is a moment, never a whole day
        before = call(server, "get-recent-changes", start="1 week ago", end=end, limit=500)
        assert not before.is_error and title not in before.text, (end, before.text)
    counter = RequestCounter(server)
    for tool, arguments, *_ in lists:
        with counter.counting() as sent:
            refused = call(server, tool, end="last tuesday", **arguments)
        assert refused.blocks == [(
            "invalid_input: Argument 'end' must be a date or time in ISO 8601 (2026-11-29, 2026-11-29T15:00:00Z; "
            "UTC when no zone is given), an age such as 24 hours ago or 3 days ago, today or yesterday; got "
            "'last tuesday'.")] and sent == [0], (tool, refused.text)


@pytest.mark.wiki
def test_page_writes_watch_or_unwatch_as_asked(wiki: RealWiki, accounts: Accounts) -> None:
    server = make_server(wiki.env())
    title = "Safety write watch test"
    create(server, title, "Text.")
    assert not call(server, "update-page", title=title, source="Unwatched.", watch="unwatch").is_error
    assert not watched(wiki, title)
    assert not call(server, "update-page", title=title, source="Watched.", watch="watch").is_error
    assert watched(wiki, title)
    limited = call(make_server(accounts.limited), "update-page", title=title, source="No.", watch="unwatch")
    assert limited.is_error and limited.blocks[0].startswith(
        f"permission_denied: The account Admin cannot change the watchlist on {wiki.key}: the bot password "
        "Admin@limited lacks the grant 'Edit your watchlist'")
    assert wiki.wikitext(title) == "Watched."
    viewing = call(make_server(accounts.limited), "get-watchlist")
    assert viewing.is_error and "lacks the grant 'View your watchlist'" in viewing.text


@on_every_version
@pytest.mark.parametrize("expiry, code, says", [
    ("yesterday", "badexpiry-past", 'Value "yesterday" for expiry parameter "expiry" is in the past.'),
    ("2001-01-01T00:00:00Z", "badexpiry-past",
     'Value "2001-01-01T00:00:00Z" for expiry parameter "expiry" is in the past.'),
    ("next tuesday-ish", "badexpiry", 'Invalid value "next tuesday-ish" for expiry parameter "expiry".'),
])
def test_a_watch_expiry_the_wiki_cannot_take_is_invalid_input(bot_server: Any, wiki: RealWiki, expiry: str,
                                                             code: str, says: str) -> None:
    """An expiry in the past or unreadable is the call's fault: the model is told to change it, not
    that the wiki must be fixed, and the page stays unwatched."""
    title = "Safety watch bad expiry test"
    result = call(bot_server, "watch-page", title=title, expiry=expiry)
    assert result.is_error and result.blocks == [
        f"invalid_input: {says} ({wiki.key}) [{code}] {NEXT_STEP['invalid_input']}"]
    assert not watched(wiki, title)


def test_a_watch_expiry_on_a_wiki_without_expiries_is_refused(third_wiki: RealWiki) -> None:
    server = make_server(third_wiki.env())
    result = call(server, "watch-page", title="Main Page", expiry="1 week")
    assert result.is_error and result.blocks[0].startswith(
        f"invalid_input: {third_wiki.key} keeps watchlist entries without expiry; nothing was changed. ")
    assert not watched(third_wiki, "Main Page")


# -- requests, refusals and lost answers -------------------------------------------------------

@on_every_version
def test_steady_state_requests_of_the_safety_net_tools(wiki: RealWiki) -> None:
    """HTTP requests per call once login, site info, rights and tokens are cached (the closing
    notes quote this table). A save's last request reads the sizes for its size change."""
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    create(server, "Safety requests warm-up", "Warm.")  # caches the rights and the tokens
    title = "Safety requests test"
    create(server, title, "One.\nTwo.")
    editor_edit(wiki, title, "One.\nTwo, by the editor.")
    bad = revision_ids(wiki, title)[0]
    calls = [
        ("get-user-contributions", {"user": "Editor"}, 1),
        ("get-log-events", {"type": "delete"}, 1),
        ("get-watchlist", {}, 1),
        ("get-page", {"title": title, "metadata": True}, 1),
        ("undo-edit", {"revisionId": bad, "dryRun": True}, 2),  # the revisions, then their texts
        ("undo-edit", {"revisionId": bad}, 3),  # the revisions, the edit, the sizes
        ("rollback-edits", {"title": title, "user": "Admin"}, 1),
        ("protect-page", {"title": title, "edit": "sysop"}, 1),
        ("protect-page", {"title": title, "edit": "sysop", "confirm": True}, 2),  # the levels kept, the change
        ("watch-page", {"title": title}, 1),
        ("watch-page", {"title": title, "expiry": "1 day"}, 2),  # whether the wiki keeps expiries, the change
    ]
    create(server, "Safety requests rollback test", "Kept.")
    editor_edit(wiki, "Safety requests rollback test", "Rolled.")
    calls.append(("rollback-edits", {"title": "Safety requests rollback test", "user": "Editor",
                                     "confirm": True}, 3))  # the edits it reverts, the rollback, the sizes
    assert_requests_per_call(server, counter, calls, lambda tool, arguments, _: (
        tool in ("rollback-edits", "protect-page") and "confirm" not in arguments))


SAFETY_BAD_ARGUMENTS = [
    ("undo-edit", {"revisionId": 0}, "'revisionId' must be at least 1"),
    ("undo-edit", {"revisionId": 5, "oldestRevisionId": 9},
     "oldestRevisionId (9) is newer than revisionId (5)"),
    ("rollback-edits", {"title": "Apple"}, "Missing required argument 'user'"),
    ("protect-page", {"title": "Apple"}, "Give a level for edit, move, upload or create"),
    ("protect-page", {"title": "Apple", "edit": "sysop", "expiry": ""}, "'expiry' must not be empty"),
    ("get-user-contributions", {"user": "Admin|Editor"}, "one user"),
    ("get-user-contributions", {"user": "Admin", "start": "2026-02-01", "end": "2026-01-01"}, "is after end"),
    ("get-log-events", {"start": "last tuesday"}, "Argument 'start' must be a date or time in ISO 8601"),
    ("get-watchlist", {"hide": ["redirects"]}, "must be one of minor, bot, anonymous, registered"),
    ("watch-page", {"title": "Apple", "unwatch": True, "expiry": "1 week"}, "expiry goes with watching"),
    ("update-page", {"title": "Apple", "source": "x", "watch": "yes"}, "must be one of watch, unwatch"),
]


def test_bad_safety_net_arguments_are_refused_before_any_request(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    for tool, arguments, message in SAFETY_BAD_ARGUMENTS:
        with counter.counting() as n:
            result = call(server, tool, **arguments)
        assert result.is_error and len(result.blocks) == 1, (tool, arguments)
        assert result.blocks[0].startswith("invalid_input: ") and message in result.blocks[0], result.text
        assert n[0] == 0, (tool, arguments)


LOST_SAFETY_ACTIONS = {  # tool: the API action whose answer is lost
    "undo-edit": "edit", "rollback-edits": "rollback", "protect-page": "protect", "watch-page": "watch"}


@pytest.mark.parametrize("tool", list(LOST_SAFETY_ACTIONS))
def test_a_lost_answer_to_an_undo_rollback_protection_or_watch_reports_what_the_wiki_did(
        wiki: RealWiki, tool: str) -> None:
    title = f"Safety lost {tool} test"
    setup = bot_server_for(wiki)
    create(setup, title, "Good.")
    editor_edit(wiki, title, "Bad.")
    bad = revision_ids(wiki, title)[0]
    arguments = {"undo-edit": {"revisionId": bad}, "rollback-edits": {"title": title, "user": "Editor", "confirm": True},
                 "protect-page": {"title": title, "edit": "sysop", "confirm": True},
                 "watch-page": {"title": title, "unwatch": True}}[tool]
    proxy = DroppingProxy(wiki.url, drops=posts(LOST_SAFETY_ACTIONS[tool]))
    try:
        result = call(make_server(wiki.env(MEDIAWIKI_URL=proxy.api)), tool, **arguments)
        assert proxy.drops_left == 0, "the proxy never dropped an answer"
    finally:
        proxy.close()
    assert not result.is_error, result.text
    assert "(the wiki's answer was lost; " in result.blocks[0].split("\n")[0], result.text
    if tool in ("undo-edit", "rollback-edits"):
        assert wiki.wikitext(title) == "Good." and len(revision_ids(wiki, title)) == 3
        assert int(field(result, "Revision ID")) == revision_ids(wiki, title)[0]
    elif tool == "protect-page":
        assert protection_of(wiki, title) == {"edit": ("sysop", "infinity")}
    else:
        assert not watched(wiki, title)
