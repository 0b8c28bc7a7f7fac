"""Write tools for files: uploads from disk or from a URL, new files and new versions."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import stat
import time
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from .dispatch import ToolContext
from .errors import RETRY_LATER, WikiError, conflict, invalid_input, not_found, permission_denied, upstream_failure
from .guard import guarded_get, pinnable_session
from .pages import FileTitleArg, query_page, resolve_page
from .registry import Arg, tool
from .render import CANONICAL_NAMESPACES, labelled, title_in_namespace
from .saving import after_lost_answer, change_tags, edit_summary, settle_write
from .wire import _requests, host_of, without_userinfo

# An upload goes in one or two steps. First the file is sent (or, for a URL the wiki
# fetches itself, named), and MediaWiki answers with its warnings: a file with this
# title exists, the same content is already there, the name is odd. MediaWiki can only
# ignore all warnings at once (ignorewarnings), so a warned upload waits in the wiki's
# upload stash, the warnings are sorted here, and only then is the stashed file published
# with ignorewarnings: never a blind overwrite, and the bytes are not sent again.

FilePathArg = Arg("Absolute path in an upload directory.", max_length=4096, max_length_listed=False)


FileUrlArg = Arg("http(s) URL of the file.", max_length=2000, max_length_listed=False)


UploadCommentArg = Arg("Upload summary.", max_length=500, max_length_listed=False)


UploadTextArg = Arg("Description page wikitext; default: the comment.")


IgnoreWarningsArg = Arg("Upload despite warnings.")


#: Seconds the server spends fetching a URL before it leaves the fetch to the wiki.
UPLOAD_FETCH_SECONDS = 120.0


UPLOAD_FETCH_CHUNK = 64 * 1024


#: Progress of a fetch is reported at most once per this many bytes.
PROGRESS_STEP_BYTES = 1 << 20


#: MediaWiki's upload warnings in words, and whether each is about what is on the wiki
#: (conflict) or about the upload itself (invalid_input). ``{v}`` is the warning's value,
#: ``{file}`` the wiki's name of the File namespace.
UPLOAD_WARNINGS: dict[str, tuple[str, str]] = {
    "exists": ("conflict", "a file with this title exists"),
    "page-exists": ("conflict", "the description page exists but holds no file"),
    "exists-normalized": ("conflict", "a file with a similar name exists: {file}:{v}"),
    "thumb": ("conflict", "the name looks like a thumbnail of an existing file"),
    "was-deleted": ("conflict", "a file with this title was deleted before"),
    "duplicate": ("conflict", "the same content is already on the wiki as {v}"),
    "duplicate-archive": ("conflict", "the same content was deleted before as {file}:{v}"),
    "duplicateversions": ("conflict", "the content equals an earlier version of this file"),
    "nochange": ("conflict", "the content equals the current version"),
    "badfilename": ("invalid_input", "the title is not a valid file name; the wiki would save it as {file}:{v}"),
    "bad-prefix": ("invalid_input", ("the name starts like a camera's automatic name; wikis want a "
                                     "descriptive title")),
    "thumb-name": ("invalid_input", "the name looks like a thumbnail's (NNNpx-...)"),
    "filetype-unwanted-type": ("invalid_input", "the wiki discourages .{v} files"),
    "large-file": ("invalid_input", "the file is larger than the wiki recommends"),
    "empty-file": ("invalid_input", "the file is empty"),
}


#: Warnings an update expects (exists) or answers itself (nochange); any other stops it
#: unless the call passes ignoreWarnings (an earlier version's bytes included).
UPDATE_WARNINGS = ("exists", "nochange")


@dataclasses.dataclass
class UploadSource:
    """What an upload sends: the bytes, or (``data`` None) a URL for the wiki to fetch."""
    data: bytes | None
    url: str | None = None
    why_wiki_fetches: str = ""   # why the server left the fetch to the wiki

    @property
    def sha1(self) -> str | None:
        return hashlib.sha1(self.data).hexdigest() if self.data is not None else None


def explain_warnings(warnings: Mapping[str, Any], skip: Iterable[str] = (),
                     file_namespace: str = CANONICAL_NAMESPACES[6]) -> list[str]:
    """MediaWiki's upload warnings as short sentences (unknown ones by their code), files
    named with the wiki's own name of the File namespace."""
    said = []
    for code, value in [(code, value) for code, value in warnings.items() if code not in skip]:
        if isinstance(value, list):
            value = (", ".join(f"{file_namespace}:{v}" for v in value) if code == "duplicate"
                     else (value[0] if value else ""))
        text = UPLOAD_WARNINGS.get(code, ("", f"{code} ({value})" if isinstance(value, str) else code))[1]
        said.append(text.replace("{v}", str(value).replace("_", " ")).replace("{file}", file_namespace))
    return said


def file_title(ctx: ToolContext, name: str) -> str:
    """A file name as the wiki shows its title: ``Datei:Rot.png`` on a German wiki."""
    return f"{file_namespace(ctx)}:{name.replace('_', ' ')}"


def file_namespace(ctx: ToolContext) -> str:
    return ctx.site.namespaces.get(6) or CANONICAL_NAMESPACES[6]


def uploads_allowed(ctx: ToolContext) -> None:
    if ctx.site.raw.get("uploadsenabled") is False:
        raise permission_denied(f"{ctx.wiki.key} has uploads switched off; no retry by the "
                                "model changes this.")


def check_wiki_size(ctx: ToolContext, size: int, what: str) -> None:
    wiki_max = ctx.site.raw.get("maxuploadsize")
    if wiki_max and size > wiki_max:
        raise invalid_input(f"{what} is {size} bytes; {ctx.wiki.key} accepts files up to {wiki_max} bytes. "
                            "Nothing was uploaded.")


def check_upload_size(ctx: ToolContext, size: int, what: str) -> None:
    check_wiki_size(ctx, size, what)
    cap = ctx.state.config.upload_max_bytes
    if size > cap:
        raise invalid_input(f"{what} is {size} bytes; this server uploads files up to {cap} bytes "
                            "(MCP_UPLOAD_MAX_BYTES, which the operator can raise). Nothing was uploaded.")


def read_upload_file(ctx: ToolContext, filepath: str) -> UploadSource:
    """The bytes of a file from disk, if it lies inside an upload directory once links
    are resolved. Nothing is read otherwise."""
    uploads_allowed(ctx)
    directories = ctx.state.config.upload_dirs
    if not directories:
        raise permission_denied("Uploads from disk are switched off: the operator has set no upload "
                                "directory (MCP_UPLOAD_DIRS, or uploadDirs in the configuration file). No "
                                "retry by the model changes this; upload-file-from-url uploads from a URL.")
    if not os.path.isabs(filepath):
        raise invalid_input(f"filepath must be an absolute path, not {filepath!r}.")
    real = os.path.realpath(filepath)
    if not any(os.path.commonpath([real, d]) == d for d in directories):
        linked = " once its links are resolved" if real != os.path.normpath(filepath) else ""
        raise permission_denied(f"{filepath} lies outside the upload directories{linked} "
                                f"({', '.join(directories)}); this server reads no other file. No retry with "
                                "this path changes this: the file must be copied into one of them.")
    try:  # the checked path itself, never a link swapped in since; a FIFO must not block the open
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise not_found(f"There is no file {filepath}.") from None
    except OSError as error:
        raise permission_denied(f"{filepath} cannot be read: {error.strerror}.") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise invalid_input(f"{filepath} is not a regular file.")
        check_upload_size(ctx, info.st_size, filepath)
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(ctx.state.config.upload_max_bytes + 1)
    finally:
        os.close(fd)
    check_upload_size(ctx, len(data), filepath)  # it may have grown
    return UploadSource(data)


def fetch_upload_url(ctx: ToolContext, url: str) -> UploadSource:
    """Fetches a URL's file for an upload through the address guard, with a session of its own
    (the wiki's cookies and token never go to that host). A file over the cap, or whose download
    breaks off, is left to the wiki to fetch from the last address, once every redirect is checked
    here (the wiki follows them unguarded); a URL not followed to its end is refused."""
    uploads_allowed(ctx)
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        parts = urllib.parse.urlsplit("")
    address = without_userinfo(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise invalid_input(f"{address!r} is not an http(s) URL of a file.")
    cap = ctx.state.config.upload_max_bytes
    with pinnable_session(ctx.state.config.user_agent) as session:  # not the wiki's: its cookies stay home
        try:
            # the wiki's timeout, read past the rights check: the fetch asks the wiki nothing
            response = guarded_get(session, url, ctx.state.guard, timeout=ctx._client.timeout, stream=True)
        except WikiError as error:
            if error.category != "upstream_failure":
                raise  # refused by the guard, or no URL at all
            raise upstream_failure(f"{error.message} Nothing was uploaded, and the URL was not "
                                   "handed to the wiki: this server could not check where it leads. "
                                   + RETRY_LATER) from None
        with response:
            final = response.url  # the wiki follows redirects unguarded: it starts where the checks ended
            if response.status_code >= 400:
                raise (not_found if response.status_code in (404, 410) else upstream_failure)(
                    f"{address} answered HTTP {response.status_code}; nothing was uploaded. Check the URL.")
            length = response.headers.get("Content-Length", "")
            length_known = int(length) if length.isdigit() else None
            if length_known is not None:
                check_wiki_size(ctx, length_known, address)
                if length_known > cap:
                    return UploadSource(None, final, f"it is {length_known} bytes, over this server's "
                                        f"{cap}-byte cap")
            data = bytearray()
            reported = 0
            shown = 0.0  # progress must grow with every report
            deadline = time.monotonic() + UPLOAD_FETCH_SECONDS
            try:
                for chunk in response.iter_content(UPLOAD_FETCH_CHUNK):
                    data += chunk
                    if (got := len(data)) > cap:
                        return UploadSource(None, final, f"it is over this server's {cap}-byte cap")
                    if time.monotonic() > deadline:
                        return UploadSource(None, final, f"this server could not fetch it within "
                                            f"{UPLOAD_FETCH_SECONDS:g} s")
                    if got - reported >= PROGRESS_STEP_BYTES and min(got / (length_known or cap), 0.99) > shown:
                        reported, shown = got, min(got / (length_known or cap), 0.99)
                        ctx.progress(shown, 3, f"Fetched {got} bytes from {host_of(url)}")
            except _requests().RequestException as exc:
                return UploadSource(None, final, f"this server's download from {host_of(url)} broke off "
                                    f"({type(exc).__name__})")
    check_wiki_size(ctx, len(data), address)
    return UploadSource(bytes(data), final)


def upload_file_to_wiki(ctx: ToolContext, title: str, source: UploadSource, *, new: bool,
                        text: str | None, comment: str | None, ignore_warnings: bool) -> str:
    """Uploads ``source`` as a new file (``new``) or a new version of an existing one,
    publishing past exactly the warnings that the call allows (see the banner above)."""
    name = title_in_namespace(ctx.site, title, 6).partition(":")[2].strip()  # under any name of File:
    # the tool to use instead when the title's existence is the other way; a URL was fetched first
    sibling = ("update-file" if new else "upload-file") + ("-from-url" if source.url else "")
    done, total = (1, 3) if source.url else (0, 2)
    summary = edit_summary(ctx, comment)
    publish = {"action": "upload", "filename": name, "comment": summary, "tags": change_tags(ctx),
               # MediaWiki puts the comment on a new description page when no text is given;
               # the comment as written, then, not the attribution suffix.
               "text": (text if text is not None else comment or "") if new else None}
    files = {"file": (name, source.data)} if source.data is not None else None
    origin = {} if files else {"url": source.url}
    ctx.progress(done, total, f"Sending {len(source.data)} bytes to {ctx.wiki.key}" if source.data is not None
                 else f"Asking {ctx.wiki.key} to fetch {without_userinfo(source.url or '')}")
    if new and files:  # one request when the wiki has no warning: it publishes at once
        answer = send_upload(ctx, publish, files, name, source.sha1, publishing=True)
    else:  # an update always has a warning (the file exists); a URL for the wiki: learn its SHA-1
        try:
            answer = send_upload(ctx, {"action": "upload", "filename": name, "stash": True, **origin},
                                 files, name, None, publishing=False)
        except WikiError as error:
            if files or not error.code:
                raise
            raise WikiError(error.category, f"{without_userinfo(source.url or '')} was left to the wiki to "
                            f"fetch, since {source.why_wiki_fetches}, and the wiki did not: {error.message}",
                            error.code) from None
    warnings = answer.get("warnings") or {}
    where = f"{file_title(ctx, name)} on {ctx.wiki.key}"
    explained = functools.partial(explain_warnings, file_namespace=file_namespace(ctx))
    if answer.get("result") == "Success" and "filekey" not in answer:
        return upload_result(ctx, answer, name, "Uploaded.", source, total)
    if "page-exists" in warnings:  # a description page without a file: a moved file's old title?
        refuse_redirected_title(ctx, name, where, f"use {sibling} with" if new else "call again with",
                                " For a new file, pick another title." if new else "")
    if new and "exists" in warnings:
        raise conflict(f"{where} already exists; nothing was uploaded. To upload a new "
                       f"version of it, use {sibling}; otherwise pick another title.")
    if not new and "exists" not in warnings:
        why = "".join(f"; {w}" for w in explained(
            {k: v for k, v in warnings.items() if k in ("page-exists", "was-deleted")}))
        raise not_found(f"{where} does not exist{why}; nothing was uploaded. To upload a new "
                        f"file, use {sibling}.")
    if "nochange" in warnings:
        return ("No change: the file's current version already has these bytes; nothing was uploaded.\n"
                + labelled(("Title", file_title(ctx, name))))
    concerns = {k: v for k, v in warnings.items() if k not in (() if new else UPDATE_WARNINGS)}
    # the name MediaWiki publishes under, when it renames a bad one
    published_name = str(warnings.get("badfilename") or name)
    if concerns and not ignore_warnings:
        refusal = conflict if any(UPLOAD_WARNINGS.get(k, ("",))[0] == "conflict" for k in concerns) \
            else invalid_input
        remedy = (f" To use that name, call again with title='{file_title(ctx, published_name)}'."
                  if "badfilename" in concerns else "")
        raise refusal("Nothing was uploaded: the wiki warns that "
                      f"{'; '.join(explained(concerns))}.{remedy} To upload anyway, call again with "
                      "ignoreWarnings=true.")
    ctx.progress(done + 1, total, f"{ctx.wiki.key} checked the file; publishing it")
    filekey = answer.get("filekey")
    sha1 = source.sha1 or (answer.get("imageinfo") or {}).get("sha1")
    if sha1 is None and filekey:  # a warned stash of a URL the wiki fetched: its SHA-1, for a lost answer
        stashed = ctx.client.get({"action": "query", "prop": "stashimageinfo", "siifilekey": filekey,
                                  "siiprop": "sha1"}).get("query", {}).get("stashimageinfo") or [{}]
        sha1 = stashed[0].get("sha1")
    commit = {**publish, "ignorewarnings": bool(warnings), **({"filekey": filekey} if filekey else origin)}
    answer = send_upload(ctx, commit, None if filekey else files, published_name, sha1, publishing=True)
    if answer.get("result") != "Success":  # warned at publishing time: something changed since the check
        raise conflict(f"Nothing was uploaded: since the file was checked, the wiki found that "
                       f"{'; '.join(explained(answer.get('warnings') or {}))}. Look at "
                       f"{file_title(ctx, name)} before calling again.")
    raced = new and "exists" in (answer.get("warnings") or {})
    status = ("Uploaded, as a new version: a file with this title appeared between the check and the "
              "upload; its version stays in the file history." if raced
              else "Uploaded." if new else "Uploaded a new version; earlier versions stay in the file history.")
    return upload_result(ctx, answer, name, status, source, total, explained(warnings, ("exists",)))


def refuse_redirected_title(ctx: ToolContext, name: str, where: str, remedy: str, otherwise: str) -> None:
    """Refuses an upload to a file title that redirects, as a moved file's old title does: the
    file would lie hidden behind the redirect. ``remedy`` leads to ``title=`` the target."""
    page, redirected = query_page(ctx, titles=file_title(ctx, name), redirects=True)
    if redirected:
        target = page.get("title")
        raise conflict(f"{where} redirects to {target}; nothing was uploaded, since a file there "
                       f"would lie hidden behind the redirect. To upload a new version of {target}, "
                       f"{remedy} title='{target}'.{otherwise}")


def send_upload(ctx: ToolContext, params: Mapping[str, Any], files: Mapping[str, Any] | None,
                name: str, sha1: str | None, *, publishing: bool) -> dict[str, Any]:
    """One action=upload. A lost answer is never resent: after a publishing request the
    file's history tells whether it landed (its latest version is these bytes, by this
    account); a lost stash request published nothing. ``name``: the file's name as published."""
    def send() -> dict[str, Any]:
        try:
            return ctx.client.write(params, files=files).get("upload") or {}
        except WikiError as error:
            # MediaWiki files the replaced version under the current second, so a second new
            # version within one second fails, before anything is written (the stash is kept):
            # that second is waited out once.
            if error.code != "backend-fail-alreadyexists" or not publishing:
                raise
            ctx.client.retry.sleep(1.0)
            return ctx.client.write(params, files=files).get("upload") or {}
    answer, landed = settle_write(
        send, (lambda: landed_upload(ctx, name, sha1)) if publishing else lambda: None,
        what="the file was uploaded", look="look at the file", absent=(
            "The file's history shows no upload of these bytes by this account yet. A slow wiki may still "
            "save it: look at the file (get-file) before calling again." if publishing else
            "The wiki was only checking the file, so nothing was published; call again."))
    return answer if landed is None else {"result": "Success", "filename": name, "imageinfo": landed,
                                          "lost": True}


def landed_upload(ctx: ToolContext, name: str, sha1: str | None) -> dict[str, Any] | None:
    """The file's latest version, if it holds the bytes with this SHA-1 and this account uploaded it."""
    query = ctx.client.get({"action": "query", "titles": f"File:{name}", "prop": "imageinfo",
                            "meta": "userinfo", "iiprop": "sha1|user|url|size|mime|canonicaltitle",
                            "iilimit": 1}).get("query", {})
    page, _ = resolve_page(query)
    latest = (page.get("imageinfo") or [{}])[0]
    me = query.get("userinfo", {}).get("name")
    return latest if sha1 and latest.get("sha1") == sha1 and latest.get("user") == me else None


def upload_result(ctx: ToolContext, answer: Mapping[str, Any], name: str, status: str,
                  source: UploadSource, steps: int, noted: Iterable[str] = ()) -> str:
    """The answer to an upload, the last of its ``steps`` of progress."""
    info = answer.get("imageinfo") or {}
    title = info.get("canonicaltitle") or file_title(ctx, answer.get("filename", name))
    if answer.get("lost"):
        status = after_lost_answer(status, "the file's history shows the upload")
    ctx.progress(steps, steps, status)
    return status + "\n" + labelled(
        ("Title", title), ("File URL", info.get("url")), ("Description page", ctx.site.page_url(title)),
        ("Size", f"{info['size']} bytes" if "size" in info else None), ("MIME type", info.get("mime")),
        ("Fetched by", f"the wiki, since {source.why_wiki_fetches}" if source.why_wiki_fetches else None),
        ("Wiki warnings", "; ".join(noted)))


@tool("upload-file", "Upload file", toolset="files", read_only=False, destructive=False, idempotent=True,
      idempotency_key=True, rights=("upload",), needs_upload_dirs=True,
      see={"for a new version": "update-file", "from a URL": "upload-file-from-url"})
def upload_file(ctx: ToolContext, filepath: Annotated[str, FilePathArg], title: Annotated[str, FileTitleArg],
                text: Annotated[str | None, UploadTextArg] = None,
                comment: Annotated[str | None, UploadCommentArg] = None,
                ignoreWarnings: Annotated[bool, IgnoreWarningsArg] = False) -> str:
    """Uploads a file from this server's upload directories as a new file. Capped at
    {upload_max_bytes:MB}. Fails if the title exists."""
    return upload_file_to_wiki(ctx, title, read_upload_file(ctx, filepath), new=True, text=text,
                               comment=comment, ignore_warnings=ignoreWarnings)


@tool("update-file", "Update file", toolset="files", read_only=False, destructive=True, idempotent=True,
      idempotency_key=True, rights=("upload", "reupload|reupload-own"), needs_upload_dirs=True,
      see={"for a new file": "upload-file", "for its description": "update-page"})
def update_file(ctx: ToolContext, filepath: Annotated[str, FilePathArg], title: Annotated[str, FileTitleArg],
                comment: Annotated[str | None, UploadCommentArg] = None,
                ignoreWarnings: Annotated[bool, IgnoreWarningsArg] = False) -> str:
    """Uploads a file from this server's upload directories as a new version of a file.
    Capped at {upload_max_bytes:MB}."""
    return upload_file_to_wiki(ctx, title, read_upload_file(ctx, filepath), new=False, text=None,
                               comment=comment, ignore_warnings=ignoreWarnings)


@tool("upload-file-from-url", "Upload file from URL", toolset="files",
      read_only=False, destructive=False, idempotent=True,
      idempotency_key=True, rights=("upload",),
      see={"for a new version": "update-file-from-url", "from disk": "upload-file"})
def upload_file_from_url(ctx: ToolContext, url: Annotated[str, FileUrlArg], title: Annotated[str, FileTitleArg],
                         text: Annotated[str | None, UploadTextArg] = None,
                         comment: Annotated[str | None, UploadCommentArg] = None,
                         ignoreWarnings: Annotated[bool, IgnoreWarningsArg] = False) -> str:
    """The server fetches the URL and uploads it as a new file. Over {upload_max_bytes:MB}, the wiki
    fetches it where allowed; private addresses are refused. Fails if the title exists."""
    return upload_file_to_wiki(ctx, title, fetch_upload_url(ctx, url), new=True, text=text,
                               comment=comment, ignore_warnings=ignoreWarnings)


@tool("update-file-from-url", "Update file from URL", toolset="files",
      read_only=False, destructive=True, idempotent=True,
      idempotency_key=True, rights=("upload", "reupload|reupload-own"),
      see={"for a new file": "upload-file-from-url", "from disk": "update-file"})
def update_file_from_url(ctx: ToolContext, url: Annotated[str, FileUrlArg], title: Annotated[str, FileTitleArg],
                         comment: Annotated[str | None, UploadCommentArg] = None,
                         ignoreWarnings: Annotated[bool, IgnoreWarningsArg] = False) -> str:
    """The server fetches the URL and uploads it as a new version of a file. Over
    {upload_max_bytes:MB}, the wiki fetches it where allowed; private addresses are refused."""
    return upload_file_to_wiki(ctx, title, fetch_upload_url(ctx, url), new=False, text=None,
                               comment=comment, ignore_warnings=ignoreWarnings)
