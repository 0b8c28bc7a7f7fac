"""copy-page: a page copied between wikis, with what it uses that the target lacks named."""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Collection, Mapping, Sequence
from typing import Annotated, Any

from .client import MediaWikiClient
from .config import WikiConfig
from .diff import line_diff
from .dispatch import ToolContext, as_blocks
from .edit import CREATION, OVERWRITE, Composed, EditTarget, edit_page
from .errors import WikiError, conflict, invalid_input, not_found, permission_denied
from .pages import TitleArg, invalid_reason, main_slot, revision_of
from .read_pages import batch_pages
from .registry import Arg, tool
from .render import counted, one_line, slice_content, utf8_len
from .saving import UNCHANGED, edit_summary
from .sections import as_saved
from .siteinfo import SiteInfo
from .state import MAX_PAGES_PER_CALL

# copy-page reads the source wiki (the page and its /doc, then the templates they use), asks
# the target which of those it has, then creates each page through edit_page, so
# a copy meets every guard an edit meets. The summary credits the source page and revision,
# as licences such as CC BY-SA require of a copy.

@dataclasses.dataclass(frozen=True)
class SourcePage:
    """A page of the source wiki as a copy reads it, and the title it takes on the target
    (None where the target has no such namespace); ``redirect``: the page is one (its text then
    only leads to another page)."""
    title: str
    revid: int
    text: str
    target: str | None
    redirect: bool = False


def source_client(ctx: ToolContext, key: str) -> tuple[WikiConfig, MediaWikiClient]:
    """The wiki a copy reads from, and the client it reads with (a signed-in person's own, as
    Caller.client chooses): the one place a tool reads a wiki other than its call's."""
    wiki, client = ctx.state.wiki_and_client(key)
    return wiki, ctx.caller.client(ctx.state, wiki, client)


def on_target(site: SiteInfo, page: Mapping[str, Any]) -> str | None:
    """A source page's title on the target wiki (``site``): the same name in the same namespace,
    as the target names it; None when the target lacks that namespace (a Module: without
    Scribunto)."""
    namespace = int(page.get("ns", 0))
    name = page["title"].partition(":")[2] if namespace else page["title"]
    if namespace not in site.namespaces:
        return None
    return f"{site.namespaces[namespace]}:{name}" if namespace else name


def pages_by_title(client: MediaWikiClient, titles: Sequence[str], **params: Any
                   ) -> dict[str, dict[str, Any]]:
    """The pages of ``titles`` as a query with ``params`` answers, by the title asked ({} for one
    the wiki does not answer), in one request each 50 titles (MediaWiki's limit for most accounts)."""
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(titles), MAX_PAGES_PER_CALL):
        asked = list(titles[start:start + MAX_PAGES_PER_CALL])
        query = client.get({"action": "query", "titles": asked, **params}).get("query", {})
        found |= {title: page or {} for title, (page, _) in batch_pages(query, asked).items()}
    return found


@tool("copy-page", "Copy page", toolset="edit",
      read_only=False, destructive=True, idempotent=True, dry_run=True, idempotency_key=True,
      rights=("edit", "createpage"), offered=lambda state: len(state.wikis) > 1)
def copy_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    fromWiki: Annotated[str, Arg("Wiki key to copy from; wiki is the target.", max_length=300,
                                 max_length_listed=False)],
    newTitle: Annotated[str | None, Arg("Title on the target; default: title.", title=True)] = None,
    withTemplates: Annotated[bool, Arg("Also its /doc, the templates it uses, their modules.")] = False,
    overwrite: Annotated[bool, Arg("Replace the page and /doc where they exist.")] = False,
) -> str:
    """Copies a page's wikitext from another configured wiki, the summary crediting the source page
    and revision. Leaves an existing page alone unless overwrite=true, and a template the target
    has always; dryRun lists what would be created. Answers with what was created, left alone, and
    the templates still missing. A private wiki's pages go to private wikis only."""
    key = ctx.state.resolve_wiki(fromWiki)
    if key == ctx.wiki.key:
        raise invalid_input(f"fromWiki and wiki both name {key}: copy-page copies from one wiki to another "
                            "(wiki is the target).")
    source, client = source_client(ctx, key)
    if source.private and not ctx.wiki.private:
        raise permission_denied(f"The wiki {key} is private and {ctx.wiki.key} is not: a copy would "
                                "publish its page there; nothing was copied. The operator marks wikis "
                                "private, and no retry by the model changes it.")
    nothing = f"Nothing was copied{' (dry run)' if ctx.dry_run else ''}"
    plan = copy_plan(ctx, key, client, title, newTitle, withTemplates, overwrite, nothing)
    return copy_answer(ctx, plan, nothing)


def copy_plan(ctx: ToolContext, key: str, client: MediaWikiClient, title: str, new_title: str | None,
              templates: bool, overwrite: bool, nothing: str) -> CopyPlan:
    """What a copy of ``title`` from the wiki ``key`` would do here: the source read (the page,
    with ``templates`` its /doc and the templates they use), and the target asked which of
    their titles it has."""
    here = ctx.client.site  # the client's first use checks the account's rights, before the source is read
    texts = {"rvprop": "ids|content", "rvslots": "main"}  # the latest revision's
    read = pages_by_title(client, [title, f"{title}/doc"] if templates else [title],
                          prop="revisions|templates|info", tllimit="max", **texts)
    first = read[title]
    if first.get("invalid"):
        raise invalid_input(f"{title!r} is not a valid page title: {invalid_reason(first)}")
    if first.get("special") or "interwiki" in first:
        raise invalid_input(f"{title!r} is no page of {key} (a special page, or another wiki's); "
                            f"{nothing.lower()}.")
    if new_title and here.namespace_of(new_title) < 0:
        raise invalid_input(f"newTitle {new_title!r} names a special page, which no one can create; "
                            f"{nothing.lower()}.")
    if first.get("missing") or not first:
        raise not_found(f"Page {title!r} does not exist on {key}; {nothing.lower()}. search-page-by-prefix "
                        f"with wiki={key} finds its titles.")
    pages = [page for page in read.values() if page and not page.get("missing")]  # the page, then its /doc
    named = {page["title"] for page in pages}
    used = {t["title"]: t for page in pages for t in page.get("templates") or [] if t["title"] not in named}
    if templates and used:
        pages += [p for p in pages_by_title(client, sorted(used), prop="revisions", **texts).values()
                  if p and not p.get("missing")]
    copies = [SourcePage(page["title"], revision_of(page).get("revid", 0),
                         main_slot(revision_of(page)).get("content", ""), on_target(here, page),
                         bool(page.get("redirect"))) for page in pages]
    if new_title:
        copies[0] = dataclasses.replace(copies[0], target=new_title)
        if len(named) > 1:
            copies[1] = dataclasses.replace(copies[1], target=f"{new_title}/doc")
    elif copies[0].target is None:
        raise invalid_input(f"{ctx.wiki.key} has no namespace for {copies[0].title!r}; {nothing.lower()}. "
                            "Pass newTitle, a title in a namespace it has.")
    # the templates used that this copy does not bring: all without withTemplates, else those the
    # source lacks too (a red link there)
    brought = {c.title for c in copies}
    elsewhere = [on_target(here, t) or t["title"] for t in used.values() if t["title"] not in brought]
    exists = {target: page.get("lastrevid", 0) for target, page in pages_by_title(
        ctx.client, [c.target for c in copies if c.target] + elsewhere, prop="info").items()
        if page and not page.get("missing") and not page.get("invalid")}
    replaced = {c.target for c in copies[:len(named)]} if overwrite else set()
    return CopyPlan(key, client.site, copies, exists, replaced, [t for t in elsewhere if t not in exists])


@dataclasses.dataclass(frozen=True)
class CopyPlan:
    """What a copy found: the source's pages to copy (the page first, then its /doc, then the
    templates), the target's existing ones among their titles (with their latest revision), those
    an overwrite replaces, and templates the page uses that the target lacks and this copy leaves."""
    source: str
    site: SiteInfo
    copies: list[SourcePage]
    exists: Mapping[str, int]
    replaced: Collection[str | None]
    lacking: list[str]


def copy_answer(ctx: ToolContext, plan: CopyPlan, nothing: str) -> str:
    """Copies each page of the plan that it copies (a dry run only says which), the first one's
    error being the call's; the answer says what was created, left alone and still lacking."""
    lacking = plan.lacking + [f"{c.title} (the target has no namespace for it)" for c in plan.copies
                              if c.target is None]
    kept = [c.target for c in plan.copies
            if c.target and c.target in plan.exists and c.target not in plan.replaced]
    going = [(c, c.target) for c in plan.copies if c.target and c.target not in kept]
    blocks: list[str] = []
    failed: list[str] = []
    for number, (copy, target) in enumerate(going):
        replacing = target in plan.exists
        if ctx.dry_run:
            blocks.append(f"Would {'replace' if replacing else 'create'}: {target}, from revision {copy.revid} "
                          f"of {copy.title!r} ({utf8_len(copy.text)} bytes)")
            continue
        # crediting the source page and revision, and where to read its history
        source = f"{copy.title!r} on {plan.site.name or plan.site.server}, revision {copy.revid}"
        summary = edit_summary(ctx, f"Copied from {source} ({plan.site.index_url(oldid=copy.revid)}); its "
                                    "history names the authors")
        change = Composed(copy.text, summary=summary)
        try:  # created (createonly), or replaced pinned to the revision last read here, else the latest
            saved = edit_page(ctx, target, functools.partial(overwriting, ctx, change),
                              OVERWRITE if replacing else CREATION)
            blocks.append("\n".join(as_blocks(saved)))
        except WikiError as error:
            if error.code == "articleexists":  # made since the target was asked
                kept.append(target)
                continue
            if not number:
                raise
            failed.append(f"{target} ({one_line(str(error))})")
    same = sum(block.startswith(UNCHANGED) for block in blocks)  # an overwrite with the text it has
    done = len(blocks) - same
    head = (f"{nothing}. copy-page would copy {counted(done, 'page')} from {plan.source}." if ctx.dry_run else
            f"Copied {counted(done, 'page')} from {plan.source}"
            + (f" ({counted(same, 'page')} here already had the source's text)." if same else "."))
    redirects = [f"{target} (from {copy.title!r})" for copy, target in going if copy.redirect]
    files = [target for _, target in going if ctx.site.namespace_of(target) == 6]
    alone = ("Left alone (the target's own templates: overwrite replaces the page and its /doc only)"
             if plan.replaced else "Left alone (it exists here; overwrite=true replaces the page and its /doc)")
    notes = [f"{label}: {', '.join(titles)}" for label, titles in (
        (alone, kept),
        ("A redirect, copied as one (copy the page it leads to as well)", redirects),
        ("A file's description page, copied without the file (upload-file uploads it)", files),
        ("Not copied", failed), ("Templates this wiki still lacks", lacking)) if titles]
    apart = "\n" if ctx.dry_run else "\n\n"  # a dry run's rows, or each save's own answer
    return "\n".join([head, *notes]) + "".join(apart + block for block in blocks)


def overwriting(ctx: ToolContext, change: Composed, target: EditTarget) -> Composed:
    """A copy's change of ``target``, refused where the target changed since the revision it is
    pinned to and that revision already has the source's text: MediaWiki would merge nothing into
    the latest and save nothing, leaving what the target has and the source lacks."""
    if target.pin and target.pin != target.latest and as_saved(change.text) == as_saved(target.base_text) \
            and as_saved(target.now) != as_saved(target.base_text):
        diff = slice_content(line_diff(change.text, target.now), 0, ctx.budget)
        raise conflict(f"Nothing was copied to {target.title!r}: it changed since revision {target.pin}, the one "
                       f"last read here, which has the source's text; its latest, {target.latest}, has what the "
                       "source lacks, so the save would change nothing. The source's text against the "
                       f"target's latest:\n{diff.text}{' …' if diff.truncated else ''}\nTo replace that with the "
                       "source's text, read the page with get-page, then call copy-page again with overwrite=true.")
    return change
