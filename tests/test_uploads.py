"""Tests: File uploads on the real wiki."""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import requests
from mcp import Client

from mediawiki_mcp.config import Config
from mediawiki_mcp.settings import DEFAULT_UPLOAD_MAX_BYTES, ConfigError
from mediawiki_mcp.wire import host_of
from mediawiki_mcp.write_files import explain_warnings
from realwiki import (
    RealWiki,
    free_port,
)
from tests.support import (
    DroppingProxy,
    FakeWiki,
    Reply,
    RequestCounter,
    assert_requests_per_call,
    call,
    fake_server,
    field,
    file_versions,
    list_tools,
    make_server,
    on_every_version,
    sha1,
    unique_png,
    upload_server,
    uploads_dir,
)

UPLOAD_TOOLS = ("upload-file", "update-file", "upload-file-from-url", "update-file-from-url")


def test_upload_tools_are_paired_annotated_and_name_the_file_title(bot_server: Any) -> None:
    tools = {t.name: t for t in list_tools(bot_server)}
    hints = {name: (tools[name].annotations.read_only_hint, tools[name].annotations.destructive_hint,
                    tools[name].annotations.idempotent_hint, tools[name].annotations.open_world_hint)
             for name in UPLOAD_TOOLS}
    assert hints == {"upload-file": (False, False, True, True), "update-file": (False, True, True, True),
                     "upload-file-from-url": (False, False, True, True),
                     "update-file-from-url": (False, True, True, True)}
    for new, update in (("upload-file", "update-file"), ("upload-file-from-url", "update-file-from-url")):
        assert update in tools[new].description and new in tools[update].description
    for name in UPLOAD_TOOLS:
        properties = tools[name].input_schema["properties"]
        assert properties["title"]["description"].startswith("File title")
        assert "idempotencyKey" in properties and "ignoreWarnings" in properties
        assert "100 MB by default" in tools[name].description
        entry = json.dumps(tools[name].model_dump(mode="json", by_alias=True, exclude_none=True),
                           separators=(",", ":"))
        assert len(entry.encode()) < 1350, (name, len(entry.encode()))


@on_every_version
def test_upload_file_puts_the_exact_bytes_on_the_wiki_and_never_overwrites(
        wiki: RealWiki, tmp_path: Path) -> None:
    directory = uploads_dir(tmp_path)
    picture, notes = directory / "picture.png", directory / "notes.txt"
    picture.write_bytes(unique_png("upload test picture"))
    notes.write_text("Notes uploaded by the upload test.\nSecond line: ünïcödé.\n", encoding="utf-8")
    server = upload_server(wiki, directory)
    result = call(server, "upload-file", filepath=str(picture), title="File:Upload test picture.png",
                  text="A test picture.\n[[Category:Uploads]]", comment="First picture")
    assert not result.is_error, result.text
    assert result.blocks[0].startswith("Uploaded.\nTitle: File:Upload test picture.png\n")
    assert field(result, "Description page") == f"{wiki.url}/wiki/File:Upload_test_picture.png"
    assert field(result, "MIME type") == "image/png"
    assert field(result, "Size") == f"{len(picture.read_bytes())} bytes"
    assert requests.get(field(result, "File URL"), timeout=30).content == picture.read_bytes()
    [version] = file_versions(wiki, "File:Upload test picture.png")
    assert version["sha1"] == sha1(picture.read_bytes()) and version["comment"] == "First picture (via mediawiki-mcp)"
    assert wiki.wikitext("File:Upload test picture.png") == "A test picture.\n[[Category:Uploads]]"

    # no File: prefix, and the wiki's alias of the namespace (Image:) work alike
    text = call(server, "upload-file", filepath=str(notes), title="Upload test notes.txt", comment="Notes")
    assert not text.is_error and field(text, "Title") == "File:Upload test notes.txt"
    assert requests.get(field(text, "File URL"), timeout=30).content == notes.read_bytes()
    assert wiki.wikitext("File:Upload test notes.txt") == "Notes"  # the comment, without the suffix

    (directory / "other.png").write_bytes(unique_png("upload test other picture"))
    again = call(server, "upload-file", filepath=str(directory / "other.png"),
                 title="Image:Upload test picture.png", ignoreWarnings=True)
    assert again.is_error and again.blocks[0].startswith(
        f"conflict: File:Upload test picture.png on {wiki.key} already exists; nothing was uploaded. "
        "To upload a new version of it, use update-file")
    assert [v["sha1"] for v in file_versions(wiki, "File:Upload test picture.png")] == [version["sha1"]]


def test_an_upload_repeated_with_one_idempotency_key_lands_once(wiki: RealWiki, tmp_path: Path) -> None:
    directory = uploads_dir(tmp_path)
    (directory / "once.txt").write_text("Uploaded once, though asked twice.\n")
    server = upload_server(wiki, directory)
    arguments = {"filepath": str(directory / "once.txt"), "title": "Upload idempotency test.txt",
                 "idempotencyKey": "upload-7c1d"}
    first, second = call(server, "upload-file", **arguments), call(server, "upload-file", **arguments)
    assert not first.is_error and not second.is_error, (first.text, second.text)
    assert second.blocks[0].startswith("Repeat: ") and second.blocks[0].endswith(first.blocks[0])
    assert len(file_versions(wiki, "File:Upload idempotency test.txt")) == 1


@on_every_version
def test_update_file_adds_a_version_and_keeps_the_old_one(wiki: RealWiki, tmp_path: Path) -> None:
    directory = uploads_dir(tmp_path)
    first, second = unique_png("update test one"), unique_png("update test two")
    path = directory / "chart.png"
    path.write_bytes(first)
    server = upload_server(wiki, directory)
    assert not call(server, "upload-file", filepath=str(path), title="Update test chart.png").is_error
    path.write_bytes(second)
    result = call(server, "update-file", filepath=str(path), title="File:Update test chart.png",
                  comment="Redrawn")
    assert not result.is_error, result.text
    assert result.blocks[0].startswith("Uploaded a new version; earlier versions stay in the file history.\n"
                                       "Title: File:Update test chart.png\n")
    assert requests.get(field(result, "File URL"), timeout=30).content == second
    versions = file_versions(wiki, "File:Update test chart.png")
    assert [v["sha1"] for v in versions] == [sha1(second), sha1(first)]
    assert versions[0]["comment"] == "Redrawn (via mediawiki-mcp)"

    same = call(server, "update-file", filepath=str(path), title="Update test chart.png")
    assert not same.is_error and same.blocks[0].startswith(
        "No change: the file's current version already has these bytes; nothing was uploaded.")
    path.write_bytes(first)  # back to the first version's bytes: a warning, which stops it unless told
    refused = call(server, "update-file", filepath=str(path), title="Update test chart.png")
    assert refused.is_error and refused.blocks == [
        ("conflict: Nothing was uploaded: the wiki warns that the content equals an earlier version of this "
         "file. To upload anyway, call again with ignoreWarnings=true.")]
    assert len(file_versions(wiki, "File:Update test chart.png")) == 2
    back = call(server, "update-file", filepath=str(path), title="Update test chart.png", ignoreWarnings=True)
    assert not back.is_error, back.text
    assert field(back, "Wiki warnings") == "the content equals an earlier version of this file"
    assert len(file_versions(wiki, "File:Update test chart.png")) == 3

    missing = call(server, "update-file", filepath=str(path), title="Update test never uploaded.png")
    assert missing.is_error and missing.blocks[0].startswith(
        f"not_found: File:Update test never uploaded.png on {wiki.key} does not exist; nothing was "
        "uploaded. To upload a new file, use upload-file.")
    assert file_versions(wiki, "File:Update test never uploaded.png") == []


def test_paths_outside_the_upload_directories_are_refused_before_any_request(
        wiki: RealWiki, tmp_path: Path) -> None:
    directory = uploads_dir(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("Not for the wiki.\n")
    (directory / "escape.txt").symlink_to(outside / "secret.txt")
    (directory / "inside.txt").write_text("Inside, but named relatively.\n")
    (directory / "folder").mkdir()
    server = upload_server(wiki, directory)
    counter = RequestCounter(server)
    refusals = [
        (str(outside / "secret.txt"), "permission_denied: ", "lies outside the upload directories ("),
        (str(directory / "escape.txt"), "permission_denied: ", "once its links are resolved"),
        (f"{directory}/../outside/secret.txt", "permission_denied: ", "lies outside the upload directories"),
        ("uploads/inside.txt", "invalid_input: ", "filepath must be an absolute path"),
        (str(directory / "absent.txt"), "not_found: ", "There is no file"),
        (str(directory / "folder"), "invalid_input: ", "is not a regular file"),
    ]
    for n, (filepath, category, message) in enumerate(refusals):
        title = f"Upload refused test {n}.txt"
        with counter.counting() as sent:
            result = call(server, "upload-file", filepath=filepath, title=title)
        assert result.is_error and result.blocks[0].startswith(category) and message in result.text, result.text
        assert "Not for the wiki" not in result.text
        assert sent[0] == 0 and file_versions(wiki, f"File:{title}") == [], filepath
    with counter.counting() as sent:
        result = call(server, "update-file", filepath=str(directory / "escape.txt"), title="Upload refused test 0.txt")
    assert result.is_error and result.blocks[0].startswith("permission_denied: ") and sent[0] == 0


def test_a_fifo_in_an_upload_directory_is_refused_at_once(wiki: RealWiki, tmp_path: Path) -> None:
    directory = uploads_dir(tmp_path)
    fifo = directory / "pipe.png"
    os.mkfifo(fifo)

    def unblock() -> None:  # were the open to wait for a writer, this one lets it go on after 10 s
        if not done.wait(10):
            with open(fifo, "wb"):
                pass
    done = threading.Event()
    threading.Thread(target=unblock, daemon=True).start()
    began = time.monotonic()
    result = call(upload_server(wiki, directory), "upload-file", filepath=str(fifo), title="Upload fifo test.png")
    done.set()
    assert time.monotonic() - began < 5
    assert result.blocks == [f"invalid_input: {fifo} is not a regular file."]
    assert file_versions(wiki, "File:Upload fifo test.png") == []


BAD_UPLOAD_ARGUMENTS = [
    ("upload-file", {"filepath": 7, "title": "A.txt"}, "'filepath' must be a string"),
    ("upload-file", {"filepath": "/tmp/a.txt"}, "Missing required argument 'title'"),
    ("upload-file", {"filepath": "/tmp/a.txt", "title": "  "}, "'title' must be a non-empty page title"),
    ("upload-file", {"filepath": "/tmp/a.txt", "title": "A.txt", "overwrite": True}, "Unknown argument 'overwrite'"),
    ("update-file", {"filepath": "/tmp/a.txt", "title": "A.txt", "ignoreWarnings": "yes"},
     "'ignoreWarnings' must be true or false"),
    ("upload-file-from-url", {"url": "http://example.org/" + "a" * 2000, "title": "A.txt"}, "at most 2000"),
    ("upload-file-from-url", {"url": "file:///etc/passwd", "title": "A.txt"}, "is not an http(s) URL"),
    ("update-file-from-url", {"url": "ftp://example.org/a.txt", "title": "A.txt"}, "is not an http(s) URL"),
    ("upload-file-from-url", {"url": "http://[::1/a.txt", "title": "A.txt"}, "is not an http(s) URL"),
    ("upload-file-from-url", {"url": "http://example.org:port/a.txt", "title": "A.txt"}, "is not an http(s) URL"),
    ("update-file-from-url", {"url": "http://example.org/a.txt", "title": "A.txt", "text": "x"},
     "Unknown argument 'text'"),
]


def test_bad_upload_arguments_are_invalid_input_and_send_nothing(wiki: RealWiki, tmp_path: Path) -> None:
    server = upload_server(wiki, uploads_dir(tmp_path))
    counter = RequestCounter(server)
    for tool, arguments, message in BAD_UPLOAD_ARGUMENTS:
        with counter.counting() as sent:
            result = call(server, tool, **arguments)
        assert result.is_error and result.blocks[0].startswith("invalid_input: ") and message in result.text, (
            tool, result.text)
        assert sent[0] == 0, (tool, arguments)


def test_uploads_from_disk_are_off_without_upload_directories(wiki: RealWiki, tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("No upload directory is configured.\n")
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    for tool in ("upload-file", "update-file"):
        with counter.counting() as sent:
            result = call(server, tool, filepath=str(tmp_path / "file.txt"), title="Upload disabled test.txt")
        assert result.is_error and result.blocks[0].startswith(
            "permission_denied: Uploads from disk are switched off: the operator has set no upload directory")
        assert "No retry by the model changes this" in result.text and "upload-file-from-url" in result.text
        assert sent[0] == 0
    assert file_versions(wiki, "File:Upload disabled test.txt") == []


@on_every_version
def test_upload_warnings_are_explained_and_passed_only_when_asked(wiki: RealWiki, tmp_path: Path) -> None:
    directory = uploads_dir(tmp_path)
    (directory / "original.txt").write_text("Content uploaded twice under two titles.\n")
    server = upload_server(wiki, directory)
    assert not call(server, "upload-file", filepath=str(directory / "original.txt"),
                    title="Warning test original.txt").is_error
    twin = call(server, "upload-file", filepath=str(directory / "original.txt"), title="Warning test twin.txt")
    assert twin.is_error and twin.text == (
        "conflict: Nothing was uploaded: the wiki warns that the same content is already on the wiki as "
        "File:Warning test original.txt. To upload anyway, call again with ignoreWarnings=true.")
    assert file_versions(wiki, "File:Warning test twin.txt") == []
    anyway = call(server, "upload-file", filepath=str(directory / "original.txt"),
                  title="Warning test twin.txt", ignoreWarnings=True)
    assert not anyway.is_error, anyway.text
    assert field(anyway, "Wiki warnings") == "the same content is already on the wiki as File:Warning test original.txt"
    assert len(file_versions(wiki, "File:Warning test twin.txt")) == 1

    (directory / "plain").write_text("A file name without an extension.\n")
    bare = call(server, "upload-file", filepath=str(directory / "plain"), title="Warning test bare name")
    assert bare.is_error and bare.text == (
        "invalid_input: Nothing was uploaded: the wiki warns that the title is not a valid file name; the "
        "wiki would save it as File:Warning test bare name.txt. To use that name, call again with "
        "title='File:Warning test bare name.txt'. To upload anyway, call again with ignoreWarnings=true.")
    assert file_versions(wiki, "File:Warning test bare name") == []


def test_a_file_title_that_redirects_is_named_and_never_uploaded_behind(wiki: RealWiki, tmp_path: Path) -> None:
    """A moved file leaves its old title redirecting to the new one: reads say so, and no
    upload goes to the old title, where the redirect would hide it."""
    directory = uploads_dir(tmp_path)
    first = unique_png("file redirect test first")
    (directory / "first.png").write_bytes(first)
    (directory / "newer.png").write_bytes(unique_png("file redirect test newer"))
    server = upload_server(wiki, directory)
    old, new = "File:Redirect test old name.png", "File:Redirect test new name.png"
    assert not call(server, "upload-file", filepath=str(directory / "first.png"), title=old).is_error
    moved = call(server, "move-page", fromTitle=old, toTitle=new)
    assert not moved.is_error, moved.text
    for tool in ("get-file", "get-file-data"):
        read = call(server, tool, title="Image:Redirect test old name.png")
        assert not read.is_error, read.text
        assert field(read, "Title") == new and field(read, "Redirected from") == old
    for tool, arguments, remedy in (("update-file", {}, "call again with"),
                                    ("upload-file", {"ignoreWarnings": True}, "use update-file with")):
        refused = call(server, tool, filepath=str(directory / "newer.png"), title="Redirect test old name.png",
                       **arguments)
        assert refused.is_error and refused.blocks[0].startswith(f"conflict: {old} on {wiki.key} redirects to {new}")
        assert f"{remedy} title='{new}'." in refused.text and "nothing was uploaded" in refused.text
    assert wiki.wikitext(old).startswith("#REDIRECT")
    assert [v["sha1"] for v in file_versions(wiki, new)] == [sha1(first)]


def test_upload_from_a_url_sends_the_hosts_bytes_without_the_wikis_credentials(
        wiki: RealWiki, fake: FakeWiki, tmp_path: Path) -> None:
    picture, newer = unique_png("url upload one"), unique_png("url upload two")
    fake.files["/media/photo.png"] = (picture, "image/png")
    server = make_server(wiki.env(MCP_TRUSTED_HOSTS=f"127.0.0.1:{fake.port}"))
    url = f"http://127.0.0.1:{fake.port}/media/photo.png?size=full"
    result = call(server, "upload-file-from-url", url=url, title="File:Url upload test.png", text="From a URL.")
    assert not result.is_error, result.text
    assert result.blocks[0].startswith("Uploaded.\nTitle: File:Url upload test.png\n")
    assert "Fetched by" not in result.text  # the server fetched it, not the wiki
    assert requests.get(field(result, "File URL"), timeout=30).content == picture
    [request] = fake.seen  # one request, from this server (a wiki's fetch would be a second one)
    assert request["path"] == "/media/photo.png" and request["headers"]["User-Agent"].startswith("mediawiki-mcp/")
    # the wiki's session cookie would match this host too (cookies ignore ports): none was sent
    assert not {"Cookie", "Authorization"} & set(request["headers"])

    fake.files["/media/photo.png"] = (newer, "image/png")
    update = call(server, "update-file-from-url", url=url, title="Url upload test.png", comment="Newer")
    assert not update.is_error, update.text
    assert [v["sha1"] for v in file_versions(wiki, "File:Url upload test.png")] == [sha1(newer), sha1(picture)]
    assert len(fake.seen) == 2 and "Cookie" not in fake.seen[1]["headers"]
    missing = call(server, "update-file-from-url", url=url, title="Url upload never uploaded.png")
    assert missing.is_error and missing.blocks[0].startswith("not_found: ") and "upload-file-from-url" in missing.text


def test_a_password_in_an_upload_url_is_in_no_message(wiki: RealWiki, fake: FakeWiki) -> None:
    secret = "S3cretUrlPw"
    server = make_server(wiki.env(MCP_TRUSTED_HOSTS=f"127.0.0.1:{fake.port}"))
    given = call(server, "upload-file-from-url", url=f"http://alice:{secret}@127.0.0.1:{fake.port}/a.png",
                 title="Url password test.png")
    assert given.blocks == ["invalid_input: The URL 127.0.0.1 must not carry a user name or password."]
    fake.replies = [Reply(302, b"", {"Location": f"http://alice:{secret}@127.0.0.1:99999/a.png"})]
    redirected = call(server, "upload-file-from-url", url=f"http://127.0.0.1:{fake.port}/go",
                      title="Url password test.png")
    assert redirected.blocks == ["invalid_input: 'http://127.0.0.1:99999/a.png' has an invalid port."]
    bad_port = call(server, "upload-file-from-url", url=f"http://alice:{secret}@127.0.0.1:99999/a.png",
                    title="Url password test.png")
    not_http = call(server, "upload-file-from-url", url=f"ftp://alice:{secret}@127.0.0.1/a.png",
                    title="Url password test.png")
    assert bad_port.blocks == ["invalid_input: 'http://127.0.0.1:99999/a.png' is not an http(s) URL of a file."]
    assert not_http.blocks == ["invalid_input: 'ftp://127.0.0.1/a.png' is not an http(s) URL of a file."]
    assert [s["path"] for s in fake.seen] == ["/go"] and file_versions(wiki, "File:Url password test.png") == []
    assert host_of(f"http://alice:{secret}@wiki.example:8080/x") == "wiki.example:8080"


def test_an_untrusted_private_url_is_refused_and_never_handed_to_the_wiki(
        wiki: RealWiki, fake: FakeWiki) -> None:
    fake.files["/private.txt"] = (b"Private file.\n", "text/plain")
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    for tool, title in (("upload-file-from-url", "Url refused test.txt"), ("update-file-from-url", "Url refused test.txt")):
        with counter.counting() as sent:
            result = call(server, tool, url=f"http://127.0.0.1:{fake.port}/private.txt", title=title)
        assert result.is_error and result.blocks[0].startswith(
            "permission_denied: 127.0.0.1 resolves to 127.0.0.1, a loopback address")
        assert "MCP_TRUSTED_HOSTS" in result.text and sent[0] == 0
    # a trusted host that redirects to an untrusted one: refused at the second hop
    hidden = FakeWiki()
    try:
        fake.replies = [Reply(302, b"", {"Location": f"http://localhost:{hidden.port}/private.txt"})]
        trusting = make_server(wiki.env(MCP_TRUSTED_HOSTS=f"127.0.0.1:{fake.port}"))
        result = call(trusting, "upload-file-from-url", url=f"http://127.0.0.1:{fake.port}/go", title="Url refused test.txt")
        assert result.is_error and result.blocks[0].startswith("permission_denied: localhost resolves to ")
        assert hidden.seen == []
    finally:
        hidden.close()
    assert [s["path"] for s in fake.seen] == ["/go"]  # the wiki never asked the host for anything
    assert file_versions(wiki, "File:Url refused test.txt") == []


@on_every_version
def test_a_url_over_the_cap_is_fetched_by_the_wiki(wiki: RealWiki, fake: FakeWiki) -> None:
    body = ("Line of a file larger than the test's cap.\n" * 120).encode()
    fake.files["/big.txt"] = (body, "text/plain")
    server = make_server(wiki.env(MCP_TRUSTED_HOSTS=f"127.0.0.1:{fake.port}", MCP_UPLOAD_MAX_BYTES="1000"))
    result = call(server, "upload-file-from-url", url=f"http://127.0.0.1:{fake.port}/big.txt",
                  title="Url over cap test.txt")
    assert not result.is_error, result.text
    assert field(result, "Fetched by") == f"the wiki, since it is {len(body)} bytes, over this server's 1000-byte cap"
    assert requests.get(field(result, "File URL"), timeout=30).content == body
    assert [s["headers"]["User-Agent"].split("/")[0] for s in fake.seen] == ["mediawiki-mcp", "MediaWiki"]

    # unreachable by the server, which then cannot check where the URL leads: not handed over
    closed = free_port()
    refused = make_server(wiki.env(MCP_TRUSTED_HOSTS=f"127.0.0.2:{closed}"))
    counter = RequestCounter(refused)
    with counter.counting() as sent:
        result = call(refused, "upload-file-from-url", url=f"http://127.0.0.2:{closed}/file.txt",
                      title="Url unreachable test.txt")
    assert result.is_error and result.blocks[0].startswith(
        f"upstream_failure: 127.0.0.2:{closed} could not be reached (ConnectionError). Nothing was uploaded, "
        "and the URL was not handed to the wiki")
    assert sent[0] == 0 and file_versions(wiki, "File:Url unreachable test.txt") == []


def test_a_url_the_server_could_not_follow_to_its_end_is_never_handed_to_the_wiki(
        wiki: RealWiki, fake: FakeWiki) -> None:
    """The host stalls this server's fetch (or drops it), then answers the wiki's fetch with a
    redirect to a loopback address that the guard refuses: the wiki must never be asked."""
    hidden = FakeWiki()
    try:
        hidden.files["/internal.txt"] = (b"Only reachable from inside.\n", "text/plain")
        to_hidden = Reply(302, b"", {"Location": f"http://localhost:{hidden.port}/internal.txt"})
        server = make_server(wiki.env(MCP_TRUSTED_HOSTS=f"127.0.0.1:{fake.port}"), timeout=(5.0, 3.0))
        counter = RequestCounter(server)
        for tool, first, failure in (("upload-file-from-url", Reply(delay=60), "ReadTimeout"),
                                     ("update-file-from-url", Reply(0), "ConnectionError")):
            fake.replies = [first, to_hidden]
            with counter.counting() as sent:
                result = call(server, tool, url=f"http://127.0.0.1:{fake.port}/file.txt", title="Url stalled test.txt")
            assert result.is_error and result.blocks[0].startswith(
                f"upstream_failure: 127.0.0.1:{fake.port} could not be reached ({failure}). Nothing was "
                "uploaded, and the URL was not handed to the wiki"), result.text
            assert sent[0] == 0 and "Fetched by" not in result.text
        assert hidden.seen == [] and [s["path"] for s in fake.seen] == ["/file.txt", "/file.txt"]
        assert file_versions(wiki, "File:Url stalled test.txt") == []
    finally:
        hidden.close()


def test_progress_notifications_arrive_when_the_client_asks(wiki: RealWiki, fake: FakeWiki) -> None:
    body = ("A line of a file big enough for progress reports of its fetch.\n" * 40_000).encode()
    fake.files["/progress.txt"] = (body, "text/plain")
    server = make_server(wiki.env(MCP_TRUSTED_HOSTS=f"127.0.0.1:{fake.port}"))
    reports: list[tuple[float, float | None, str | None]] = []

    async def record(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    async def go() -> Any:
        async with Client(server) as client:
            return await client.call_tool("upload-file-from-url", {
                "url": f"http://127.0.0.1:{fake.port}/progress.txt", "title": "Progress test.txt"},
                progress_callback=record)
    result = anyio.run(go)
    assert not result.is_error, result.content
    done = [p for p, _, _ in reports]
    assert done == sorted(set(done)) and reports[-1][:2] == (3, 3) and reports[-1][2] == "Uploaded."
    assert any(m.startswith("Fetched 1048576 bytes from 127.0.0.1") for _, _, m in reports if m)
    assert f"Sending {len(body)} bytes to {wiki.key}" in [m for _, _, m in reports]
    assert sha1(body) == file_versions(wiki, "File:Progress test.txt")[0]["sha1"]


def test_a_new_version_in_the_same_second_as_the_last_is_published_once_that_second_is_over(
        fake: FakeWiki, tmp_path: Path) -> None:
    """MediaWiki files a replaced version under the current second; a second new version
    within it fails before anything is written. A real wiki does this only by chance."""
    directory = uploads_dir(tmp_path)
    (directory / "v.txt").write_text("Version two.\n")
    tokens = {"query": {"tokens": {"csrftoken": "+\\"}}}
    stashed = {"upload": {"result": "Warning", "warnings": {"exists": "V.txt"}, "filekey": "k1.txt"}}
    collided = {"errors": [{"code": "backend-fail-alreadyexists", "text": "The file "
                            "\"mwstore://local-backend/local-public/archive/2/2a/20261129120000!V.txt\" already exists."}]}
    published = {"upload": {"result": "Success", "filename": "V.txt", "warnings": {"exists": "V.txt"},
                            "imageinfo": {"url": f"http://127.0.0.1:{fake.port}/images/V.txt", "size": 13,
                                          "mime": "text/plain", "canonicaltitle": "File:V.txt"}}}
    fake.replies = [Reply(body=tokens), Reply(body=stashed), Reply(body=collided), Reply(body=published)]
    sleeps: list[float] = []
    server = fake_server(fake, sleeps, MEDIAWIKI_READ_ONLY="false", MCP_UPLOAD_DIRS=str(directory))
    result = call(server, "update-file", filepath=str(directory / "v.txt"), title="V.txt")
    assert not result.is_error and result.blocks[0].startswith("Uploaded a new version"), result.text
    assert sleeps == [1.0]
    commits = [s["params"] for s in fake.requests_to_api() if s["params"].get("filekey")]
    assert [(c["filekey"], c["ignorewarnings"]) for c in commits] == [("k1.txt", "1"), ("k1.txt", "1")]


def is_upload(body: bytes) -> bool:
    return b'name="action"\r\n\r\nupload\r\n' in body or b"filekey=" in body


@pytest.mark.parametrize("tool", ["upload-file", "update-file"])
def test_an_upload_whose_answer_is_lost_is_checked_in_the_file_history(
        wiki: RealWiki, tmp_path: Path, tool: str) -> None:
    directory = uploads_dir(tmp_path)
    title = f"Upload lost answer {tool}.png"
    path = directory / "lost.png"
    if tool == "update-file":
        path.write_bytes(unique_png(f"lost answer first {tool}"))
        assert not call(upload_server(wiki, directory), "upload-file", filepath=str(path), title=title).is_error
    path.write_bytes(unique_png(f"lost answer {tool}"))
    # the publishing request: the upload itself, or the publication of the stashed update
    proxy = DroppingProxy(wiki.url, drops=is_upload if tool == "upload-file" else (lambda b: b"filekey=" in b))
    try:
        server = make_server(wiki.env(MEDIAWIKI_URL=proxy.api, MCP_UPLOAD_DIRS=str(directory)))
        result = call(server, tool, filepath=str(path), title=title)
        assert proxy.drops_left == 0, "the proxy never dropped an answer"
    finally:
        proxy.close()
    assert not result.is_error, result.text
    assert "(the wiki's answer was lost; the file's history shows the upload)." in result.blocks[0]
    versions = file_versions(wiki, f"File:{title}")
    assert versions[0]["sha1"] == sha1(path.read_bytes()) and len(versions) == (1 if tool == "upload-file" else 2)


@on_every_version
def test_steady_state_requests_per_upload_tool(wiki: RealWiki, fake: FakeWiki, tmp_path: Path) -> None:
    """HTTP requests to the wiki per upload call once login, site info and the edit token are
    cached (the closing notes quote this table); the host of a URL gets one more from the server."""
    directory = uploads_dir(tmp_path)
    for n in range(4):
        (directory / f"f{n}.txt").write_text(f"Requests test file {n}.\n")
    small, big = b"Small file served for the requests test.\n", b"Big file for the requests test.\n" * 40
    for path, body in (("small", small), ("small2", small + b"v2"), ("big", big), ("big2", big + b"v2")):
        fake.files[f"/{path}"] = (body, "text/plain")
    server = upload_server(wiki, directory, MCP_TRUSTED_HOSTS=f"127.0.0.1:{fake.port}", MCP_UPLOAD_MAX_BYTES="1000")
    counter = RequestCounter(server)
    assert not call(server, "upload-file", filepath=str(directory / "f0.txt"), title="Requests warm-up.txt").is_error
    url = f"http://127.0.0.1:{fake.port}/"
    calls = [
        ("upload-file", {"filepath": str(directory / "f1.txt"), "title": "Requests test.txt"}, 1),
        ("upload-file", {"filepath": str(directory / "f2.txt"), "title": "Requests test.txt"}, 1),
        ("update-file", {"filepath": str(directory / "f2.txt"), "title": "Requests test.txt"}, 2),
        ("update-file", {"filepath": str(directory / "f2.txt"), "title": "Requests test.txt"}, 1),
        ("upload-file-from-url", {"url": url + "small", "title": "Requests url test.txt"}, 1),
        ("update-file-from-url", {"url": url + "small2", "title": "Requests url test.txt"}, 2),
        ("upload-file-from-url", {"url": url + "big", "title": "Requests big test.txt"}, 2),
        ("update-file-from-url", {"url": url + "big2", "title": "Requests big test.txt"}, 3),
    ]
    assert_requests_per_call(server, counter, calls, lambda tool, arguments, sent: (
        sent == 1 and tool == "upload-file" and "f2" in arguments.get("filepath", "")))
    assert len(fake.seen) == 6  # the server's fetch of each URL, and the wiki's of the two big ones


# -- the pieces behind the upload tools ----------------------------------------

def test_upload_cap_is_configured_and_checked() -> None:
    assert Config.from_env({}).upload_max_bytes == DEFAULT_UPLOAD_MAX_BYTES == 100_000_000
    assert Config.from_env({"MCP_UPLOAD_MAX_BYTES": "2048"}).upload_max_bytes == 2048
    for bad in ("0", "-5", "1e6", "lots"):
        with pytest.raises(ConfigError, match="^MCP_UPLOAD_MAX_BYTES must be a whole number"):
            Config.from_env({"MCP_UPLOAD_MAX_BYTES": bad})


def test_upload_warnings_read_as_sentences() -> None:
    assert explain_warnings({"duplicate": ["A_b.png", "C.png"], "exists": "X.png", "bad-prefix": "DSC_1.jpg",
                               "strange-new-one": "detail"}, skip=("exists",)) == [
        "the same content is already on the wiki as File:A b.png, File:C.png",
        "the name starts like a camera's automatic name; wikis want a descriptive title",
        "strange-new-one (detail)"]
