"""Everyday edits: a page's categories, a talk page's new topic and a reply signed as the wiki
signs."""
from __future__ import annotations

import collections
import dataclasses
import json
import re
from collections.abc import Collection, Iterable, Mapping
from typing import Annotated, Any

from .dispatch import ToolContext
from .edit import CATEGORY_CHANGE, NEW_TOPIC, REPLY, Composed, EditTarget, as_read, edit_page
from .errors import NEXT_STEP, invalid_input, not_found, upstream_failure
from .pages import CommentArg, LatestIdArg, TalkTitleArg, TitleArg, subject_redirect, talk_title
from .registry import Arg, tool
from .render import CANONICAL_NAMESPACES, labelled, utf8_len
from .saving import (
    EDIT_SHOWN_ONCE,
    after_lost_answer,
    change_tags,
    closing_links,
    edit_summary,
    saved_lines,
    settle_edit,
)
from .sections import (
    Section,
    as_wiki_receives,
    heading_key,
    heading_plain,
    numbered_headings,
    section_list,
    section_span,
    section_text,
    starts_heading,
    wikitext_sections,
)
from .siteinfo import SiteInfo

# Each reads the page, makes the change here, and saves it pinned to the revision it read
# (baserevid), as update-page's find-replace does: an edit made since is merged by MediaWiki
# or refused as a conflict, never overwritten.

@tool("update-page-categories", "Update page categories", toolset="edit",
      read_only=False, destructive=True, idempotent=True,
      dry_run=True, idempotency_key=True, rights=("edit",),
      see={"for other changes": "update-page"})
def update_page_categories(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    add: Annotated[list[str] | None, Arg("To add (Name|sortkey); Category: optional.", max_items=50)] = None,
    remove: Annotated[list[str] | None, Arg("To remove, any sort key.", max_items=50)] = None,
    latestId: Annotated[int | None, LatestIdArg] = None,
    comment: Annotated[str | None, CommentArg] = None,
) -> list[str] | str:
    """Adds and removes a page's categories without sending its text."""
    site = ctx.site
    adding = given_categories(site, add or [], "add")
    removing = given_categories(site, remove or [], "remove")
    if not adding and not removing:
        raise invalid_input("Give add or remove: the categories to put the page in or take it out of.")
    if both := [name for name in adding if name in removing]:
        raise invalid_input(f"{', '.join(both)} cannot be both added and removed; nothing was changed.")

    def compose(target: EditTarget) -> Composed | str:
        placed = [title_text(site, c["title"].partition(":")[2]) for c in target.page.get("categories") or []]
        new, outcome = recategorised(site, target.base_text, adding, removing, placed,
                                     template=site.namespace_of(target.title) == 10)
        # get-page showed the target's text under this title
        if target.page.get("redirect") and (redirect := REDIRECT_TEXT.match(target.base_text)):
            outcome += (f"\nRedirect: {target.title} is a redirect to {redirect.group(1).strip()}; these are the "
                        "categories of the redirect page itself, not of the page it leads to")
        if new == target.base_text:
            return ("No change: the page already is as asked; nothing was saved.\n"
                    + labelled(("Title", target.title), ("Revision ID", target.latest)) + "\n" + outcome)
        return Composed(new, outcome, edit_summary(ctx, comment))
    return edit_page(ctx, title, compose, CATEGORY_CHANGE, latest_id=latestId)


#: The start of a redirect page's text, with its target: the magic word in any of the wiki's
#: languages (#REDIRECT, #WEITERLEITUNG), so only for a page the wiki says is a redirect.
REDIRECT_TEXT = re.compile(r"\s*#[^\s\[:]+\s*:?\s*\[\[([^\[\]|\n]+)")


#: Where a link to a category places nothing: comments, and tags whose text is not wikitext
#: read on this page.
UNPARSED_WIKITEXT = re.compile(r"<!--.*?(?:-->|$)|<(nowiki|pre|includeonly|syntaxhighlight|source|math)\b"
                               r"[^>]*?(?:/>|>.*?(?:</\1\s*>|$))", re.DOTALL | re.IGNORECASE)


def title_text(site: SiteInfo, name: str) -> str:
    """A name (a category's, a user's) as the wiki writes it in titles: spaces for underscores,
    one space at a time, and a capital first letter where the wiki capitalises titles."""
    name = " ".join(name.replace("_", " ").split())
    capitalised = site.raw.get("case", "first-letter") == "first-letter"
    return name[:1].upper() + name[1:] if capitalised else name


def given_categories(site: SiteInfo, names: list[str], argument: str) -> dict[str, str]:
    """The category names a call gives (with any of the wiki's prefixes for the namespace), each
    with the sort key given after a '|' ("Wendle catchment|Wendle"), or ''."""
    found: dict[str, str] = {}
    for given in names:
        named, _, key = given.partition("|")
        name = title_text(site, named.partition(":")[2] if site.namespace_of(named) == 14 else named)
        if not name or re.search(r"[\[\]{}<>#\n]", name) or re.search(r"[\[\]\n]", key):
            raise invalid_input(f"{argument} holds {given!r}, which is not a category name (with a sort key "
                                "after '|'); nothing was changed.")
        found.setdefault(name, key.strip())
    return found


def namespace_names(site: SiteInfo, *namespaces: int) -> str:
    """A regular expression for any of the wiki's names of these namespaces (local, canonical,
    alias), spaces or underscores between words; to match without regard to case."""
    return "|".join(re.escape(name).replace(r"\ ", "[ _]+") for name, namespace in site.namespace_ids.items()
                    if namespace in namespaces)


def category_links(site: SiteInfo, text: str) -> list[tuple[re.Match[str], str]]:
    """The links in wikitext that place its page in a category (by any of the wiki's names
    for the namespace, with or without a sort key: the match's second group), each with the
    category's name."""
    link = re.compile(rf"\[\[[ _]*(?:{namespace_names(site, 14)})[ _]*:([^\[\]{{}}|<>\n]+)"
                      r"(?:\|([^\[\]\n]*))?\]\]", re.IGNORECASE)
    return [(m, title_text(site, m.group(1))) for m in parsed_matches(link, text)]


#: A template's part that only the pages using it get (unclosed, it runs to the end).
INCLUDEONLY = re.compile(r"<includeonly\s*>(.*?)(?:</includeonly\s*>|$)", re.DOTALL | re.IGNORECASE)


#: Why a category link in <includeonly> is not taken out: it is not this page's category.
INCLUDED_CATEGORY = ("in <includeonly>, so it puts the pages that use the template in the category, not this "
                     "page: to take them out, change that link in the template's wikitext with update-page")


def recategorised(site: SiteInfo, text: str, adding: Mapping[str, str], removing: Collection[str],
                  placed: list[str], template: bool = False) -> tuple[str, str]:
    """``text`` with the links to ``removing`` taken out (a line left empty goes too) and links
    to ``adding`` (each with its sort key, if any) set on lines of their own after the last
    category link, or at the end (a link there already gets the sort key given); and what was
    done, as labelled lines ending with the categories after it. ``placed``: the page's
    categories now, from templates included. On a ``template``, links are added inside its last
    <noinclude> (made when there is none): elsewhere they would place every page that uses the
    template in the category."""
    links = category_links(site, text)
    linked = {name for _, name in links}
    included = {name for part in INCLUDEONLY.findall(text) for _, name in category_links(site, part)}
    removed = [name for name in removing if name in linked]
    resorted = [name for name, key in adding.items() if key and any(
        linked_name == name and (match.group(2) or "").strip() != key for match, linked_name in links)]
    already = [name for name in adding if name not in resorted and (name in linked or name in placed)]
    added = [name for name in adding if name not in already and name not in resorted]
    prefix = site.namespaces.get(14) or CANONICAL_NAMESPACES[14]

    def link(name: str) -> str:  # [[Category:Rivers|Wendle]], or without a sort key [[Category:Rivers]]
        return f"[[{prefix}:{name}|{adding[name]}]]" if adding[name] else f"[[{prefix}:{name}]]"
    for match, name in reversed(links):
        if name in removed:
            text = cut_out(text, *match.span())
        elif name in resorted:
            text = text[:match.start()] + link(name) + text[match.end():]
    new_links = "".join("\n" + link(name) for name in added)
    if new_links and template:
        text = in_noinclude(text, new_links)
    elif new_links and (after := category_links(site, text)):
        end = text.find("\n", after[-1][0].end())
        end = len(text) if end < 0 else end
        text = text[:end] + new_links + text[end:]
    elif new_links:  # at the end, a blank line apart
        text = text.rstrip() + "\n" + new_links if text.strip() else new_links.lstrip("\n")
    kept = [f"{prefix}:{name} (" + ("placed by a template, not in the page's wikitext)" if name in placed else
                                    f"{INCLUDED_CATEGORY})" if name in included else
                                    "not on the page)") for name in removing if name not in linked]

    def named(names: list[str]) -> str:
        return ", ".join(f"{prefix}:{n}" for n in names)
    now = [name for name in dict.fromkeys(placed + added) if name not in removed]
    inside = template and added and "inside <noinclude>, so pages using the template are not put in it"
    return text, labelled(("Added", named(added)), ("Placed", inside), ("Removed", named(removed)),
                          ("Sort key set", ", ".join(f"{prefix}:{n} ({adding[n]})" for n in resorted)),
                          ("Already in", named(already)), ("Not removed", "; ".join(kept)),
                          ("Categories", named(now) or "none"))


#: A template's part that pages using it do not get.
NOINCLUDE = re.compile(r"<noinclude\s*>(.*?)</noinclude\s*>", re.DOTALL | re.IGNORECASE)


def in_noinclude(text: str, lines: str) -> str:
    """Template text with ``lines`` (each after a line break) at the end of its last
    <noinclude> part, or in a new one at the end, right after the text so that the template
    gives no new line break."""
    parts = parsed_matches(NOINCLUDE, text)
    if not parts:
        return f"{text}<noinclude>{lines}\n</noinclude>"
    start, end = parts[-1].span(1)
    return text[:start] + text[start:end].rstrip("\n") + lines + "\n" + text[end:]


def parsed_matches(pattern: re.Pattern[str], text: str) -> list[re.Match[str]]:
    """The matches of ``pattern`` in wikitext that start outside comments and unparsed tags."""
    unparsed = [m.span() for m in UNPARSED_WIKITEXT.finditer(text)]
    return [m for m in pattern.finditer(text) if not any(start <= m.start() < end for start, end in unparsed)]


def cut_out(text: str, start: int, end: int) -> str:
    """``text`` without ``text[start:end]``, and without its line if nothing else is on it."""
    line_start, line_end = text.rfind("\n", 0, start) + 1, text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    if not (text[line_start:start] + text[end:line_end]).strip():
        return text[:line_start] + text[line_end + 1:]
    before = text[:start]
    if before.endswith(" ") and text[end:end + 1] in (" ", "\n", ""):  # no double space where it stood
        before = before[:-1]
    return before + text[end:]


def with_signature(message: str) -> str:
    """A talk page message signed with ~~~~ (which the wiki expands), unless it is already."""
    message = message.strip()
    return message if message.endswith("~~~~") else message + " ~~~~"


@tool("add-talk-topic", "Add talk topic", toolset="talk",
      read_only=False, destructive=False, idempotent=False, dry_run=True,
      idempotency_key=True, rights=("edit",),
      see={"to answer a topic": "reply-on-talk-page"})
def add_talk_topic(
    ctx: ToolContext,
    title: Annotated[str, TalkTitleArg],
    heading: Annotated[str, Arg("Heading.", max_length=255)],
    message: Annotated[str, Arg("Wikitext; the server signs it.")],
) -> list[str] | str:
    """Starts a topic at the end of a page's talk page (made if missing); returns the revision and
    the talk page used."""
    heading, text = heading_given(heading), with_signature(as_wiki_receives(message))
    if not heading or not message.strip():
        raise invalid_input("heading and message must not be empty.")
    talk = talk_title(ctx, title)
    if inside := next((line.strip() for line in text.split("\n") if starts_heading(line)), None):
        raise invalid_input(f"The message holds a heading ({inside}), which would split it into a topic of its "
                            f"own on {talk!r}; nothing was saved. Give the message without it, or start each "
                            "topic with add-talk-topic.")

    def compose(target: EditTarget) -> Composed:
        if not target.latest and talk != title and (to := subject_redirect(ctx, target.title)):
            raise invalid_input(f"Nothing was saved: {title!r} is a redirect to {to!r}, and {target.title!r} "
                                "does not exist, so a topic there would go where readers of that page do not "
                                f"look. To start it on {talk_title(ctx, to)!r}, call add-talk-topic with "
                                f"title={json.dumps(to, ensure_ascii=False)}; to make {target.title!r} anyway, "
                                "pass that as title.")
        new = (target.now + "\n\n" if target.now else "") + f"== {heading} ==\n\n{text}"
        sections = wikitext_sections(target.now, ctx.site.syntax)
        same = next((s for s in sections if heading_key(s.heading) == heading_key(heading)), None)
        note = same and (f"Note: {target.title!r} already had a topic headed {same.heading!r} (section "
                         f"{same.number}); this is section {sections[-1].number + 1}. To answer a topic, use "
                         "reply-on-talk-page.")
        # in the wiki's language, as MediaWiki's: '/* Plans */ new section', 'Neuer Abschnitt /* Pläne */'
        summary = ctx.client.summaries.get("newsectionsummary", "/* $1 */ new section").replace("$1", heading)
        # MediaWiki adds a new section to the page as it then is: no base, and it makes the page.
        return Composed(new, note or "", edit_summary(ctx, summary),
                        fields={"section": "new", "sectiontitle": heading, "text": text, "baserevid": None,
                                "nocreate": None, "createonly": None})
    return edit_page(ctx, talk, compose, NEW_TOPIC)


def heading_given(heading: str) -> str:
    """A heading as given, on one line, without the '==' markup around it if it came with it."""
    heading = " ".join(heading.split())
    marked = re.fullmatch(r"=+\s*(.*?)\s*=+", heading)
    return marked.group(1) if marked else heading


@dataclasses.dataclass(frozen=True)
class TalkComment:
    """A signed comment in a topic's lines."""
    first: int      # its first line
    last: int       # its signature's line
    indent: str     # the list markup its first line starts with (':', '*:', ...)
    author: str
    time: str       # the signature's time, as written
    words: str      # its text on one line, indentation left out
    shown: str = ""  # the name its signature shows, when not the user name ([[User:Dave|Davey]])


def list_markup(line: str) -> str:
    """The list markup a line starts with: how deep it is indented (':', '*:', '#', ...)."""
    return line[:len(line) - len(line.lstrip(":*#"))]


def talk_comments(site: SiteInfo, lines: list[str]) -> list[TalkComment]:
    """The comments in a topic's lines: each ends on a line signed with a user link and a time."""
    # a link to a user's page, talk page or contributions (its user name the first or second group,
    # the name it shows the third), and a signature's time: 12:34, 5 March 2026 (UTC) in the wiki's language
    contributions = "|".join(["Contributions", *(re.escape(a) for a in site.contributions_aliases)])
    user = re.compile(rf"\[\[[ _]*(?:(?:{namespace_names(site, 2, 3)})[ _]*:[ _]*([^\]|/#\n]+?)|"
                      rf"(?:{namespace_names(site, -1)})[ _]*:[ _]*(?:{contributions})/([^\]|/#\n]+?))[ _]*"
                      r"(?:[/#][^\]|\n]*)?(?:\|([^\]\n]*))?\]\]", re.IGNORECASE)
    time_pattern = re.compile(r"\d{1,2}:\d{2}\b[^\n]*?\(\w+\)")
    comments: list[TalkComment] = []
    start = 0
    for number, line in enumerate(lines):
        times = list(time_pattern.finditer(line))
        links = [m for m in user.finditer(line) if times and m.end() <= times[-1].start()]
        if not links:
            continue
        first = comment_start(lines, start, number)
        author = title_text(site, links[-1].group(1) or links[-1].group(2))
        signature = links[-1].start()  # with the links just before it: [[User:A|A]] ([[User talk:A|talk]])
        for link in reversed(links[:-1]):
            if len(line[link.end():signature]) > 10:
                break
            signature = link.start()
        # the name shown is the first link's, a user page's: the talk link after it shows "talk"
        shown = heading_plain(next(m for m in links if m.start() == signature).group(3) or "")
        said = [*lines[first:number], line[:signature]]
        words = " ".join(" ".join(text[len(list_markup(text)):] for text in said).split())
        comments.append(TalkComment(first, number, list_markup(lines[first]), author, times[-1].group(),
                                    words, shown if shown.casefold() != author.casefold() else ""))
        start = number + 1
    return comments


def comment_start(lines: list[str], start: int, signed: int) -> int:
    """The first line of the comment signed on line ``signed``: back over the lines at its
    indentation, not past ``start`` or a heading. Lines at another indentation before it are
    an unsigned comment of someone else's, not the beginning of this one, except a line one
    level up that ends in a colon: it introduces the list or quote the comment ends with ("What
    we need:" then "* plates", "* cups ~~~~")."""
    markup, first = list_markup(lines[signed]), signed
    for i in range(signed - 1, start - 1, -1):
        line = lines[i]
        if starts_heading(line):
            break
        if not line.strip():
            continue
        outer = list_markup(line)
        if outer != markup and not (markup and outer == markup[:-1] and line.rstrip().endswith(":")):
            break
        markup, first = outer, i
    return first


@tool("reply-on-talk-page", "Reply on talk page", toolset="talk", read_only=False, destructive=False,
      idempotent=False, dry_run=True, idempotency_key=True, rights=("edit",),
      see={"to start a topic": "add-talk-topic"})
def reply_on_talk_page(
    ctx: ToolContext,
    title: Annotated[str, TalkTitleArg],
    topic: Annotated[int | str, Arg("Heading or number.")],
    message: Annotated[str, Arg("Wikitext; the server indents and signs it.")],
    replyTo: Annotated[str | None, Arg(
        "Comment answered: author and time as signed, or first words; default: the topic's end.")] = None,
) -> list[str] | str:
    """Replies in a topic of a page's talk page, after the answered comment's replies, one level
    deeper, signed. Edits made meanwhile are merged, else it is a conflict."""
    if not message.strip():
        raise invalid_input("message must not be empty.")
    site = ctx.site

    def compose(target: EditTarget) -> Composed:
        talk, whole, latest = target.title, target.now, target.latest
        # a topic by number as this client read it: topics archived above it since renumber it
        wanted = as_read(ctx, talk, topic, whole, latest) if isinstance(topic, int) and topic else topic
        section = topic_section(ctx, talk, whole, str(wanted))
        span = section_span(whole, section.number, site.syntax) or (0, 0)
        text = section_text(whole, span)
        subsections = wikitext_sections(text, site.syntax)[1:]
        own = len(text.encode()[:subsections[0].start].decode()) if subsections else len(text)
        comments = talk_comments(site, text[:own].split("\n"))
        answered = answered_comment(comments, replyTo, talk, section) if replyTo else None
        # a reply at the end of the page's last topic goes above the links that close the page, as
        # an append does: below them it would read as a reply to them, and MediaWiki keeps them last
        closing = closing_links(site, text) if answered is None and span[1] >= utf8_len(whole) else None
        closing_block = text[closing:] if closing is not None else ""
        lines = text[:closing].split("\n")  # the topic's own comments first; its subsections follow them
        body = reply_blocks(talk, as_wiki_receives(message))
        # a link to the topic and the word for a reply in the wiki's language, where it has one
        # (DiscussionTools' message; an English wiki's is "reply"), else the link alone
        english = site.lang.partition("-")[0] in ("en", "")
        word = ctx.client.summaries.get("discussiontools-defaultsummary-reply", "reply" if english else "")
        summary = edit_summary(ctx, f"/* {section.heading} */ {word}".rstrip())
        reply_to = answered or (comments[0] if comments else None)

        def with_discussion_tools() -> str | None:  # a reply to a named comment, where the wiki has it
            if answered is None or "discussiontools" not in ctx.client.extensions:
                return None
            comment_id = discussion_tools_id(ctx, talk, latest, whole, text, span, answered)
            return comment_id and reply_with_discussion_tools(ctx, talk, latest, comment_id, "\n".join(body),
                                                              summary)
        return Composed("\n".join(with_reply(lines, comments, reply_to, body, at_end=answered is None))
                        + closing_block,
                        labelled(("Topic", f"{section.number} ({section.heading})"),
                                 ("Reply to", f"{reply_to.author}, {reply_to.time}" if reply_to else None),
                                 ("Paragraphs", blank_lines_left_out(message, body) and PARAGRAPHS_JOINED)),
                        summary, section=section.number, send=with_discussion_tools)
    return edit_page(ctx, talk_title(ctx, title), compose, REPLY)


def with_reply(lines: list[str], comments: list[TalkComment], answered: TalkComment | None, body: list[str],
               at_end: bool) -> list[str]:
    """A topic's lines with a reply's lines put in, one level deeper than the comment answered in
    the page's list style (':' or '*', as its ``comments`` are indented): after that comment and
    the replies below it, or (at_end) after the topic's last line."""
    indent = answered.indent if answered else ""
    at = max((i + 1 for i, line in enumerate(lines) if line.strip()), default=len(lines))
    if answered and not at_end:
        at = answered.last + 1
        for i in range(at, len(lines)):
            if lines[i].strip() and len(list_markup(lines[i])) <= len(indent):
                break
            at = i + 1 if lines[i].strip() else at
    # The style of the replies, not of any indented line: a comment's own list or quote is no reply,
    # and a '*' reply after a comment's bulleted list would be that list's next item.
    style = indent[-1] if indent[-1:] in (":", "*") else next(
        (c.indent[-1] for c in comments if c.indent[-1:] in (":", "*")), ":")
    # MediaWiki indents a table only by colons (Parser::handleTables): '*{|' is no table.
    return lines[:at] + [(":" * len(indent + style) if block.startswith("{|") else indent + style) + block
                         for block in body] + lines[at:]


#: Tags whose content may run over several lines of a reply (block_open counts them).
BLOCK_TAGS = re.compile(r"<(/?)(pre|syntaxhighlight|source|poem|math|gallery|blockquote|div|table|ref|nowiki|"
                        r"code|references)\b[^>]*?(/?)>", re.IGNORECASE)


def reply_blocks(talk: str, message: str) -> list[str]:
    """A reply's lines, signed, each to be indented as one comment line: a table, a template
    call or a tag that runs over several lines stays one block whose lines after the first are
    not indented, since list markup before them would break them (':| a || b' is no table row).
    Empty lines go, except inside a block; the signature goes on a line of its own after one."""
    if any(starts_heading(line) for line in message.split("\n")):
        raise invalid_input(f"A reply cannot hold a heading, which would start a new topic of {talk!r}; "
                            "nothing was saved. To start a topic, use add-talk-topic.")
    blocks: list[str] = []
    for line in message.strip().split("\n"):
        if blocks and block_open(blocks[-1]):
            blocks[-1] += "\n" + line
        elif line.strip():
            blocks.append(line.strip())
    if blocks and block_open(blocks[-1]):
        raise invalid_input(f"The reply leaves a table, template call or tag open ({blocks[-1][:60]!r}...); "
                            "nothing was saved. Close it ('|}', '}}', '</tag>'), then call again.")
    if blocks and "\n" in blocks[-1] and not blocks[-1].rstrip().endswith("~~~~"):
        return [*blocks, "~~~~"]
    return [*blocks[:-1], with_signature(blocks[-1])] if blocks else []


#: What a reply whose paragraphs were apart says: its blank lines went.
PARAGRAPHS_JOINED = ("each is a line of its own at the reply's indentation, the blank lines between them left "
                     "out, as MediaWiki's reply tool writes them: a blank line would end the indentation")


def blank_lines_left_out(message: str, body: list[str]) -> bool:
    """Whether the lines of a reply (reply_blocks) left out blank lines of its ``message``."""
    def blank(text: str) -> int:
        return sum(not line.strip() for line in text.split("\n"))
    return blank(message.strip()) > sum(blank(block) for block in body)


def block_open(text: str) -> bool:
    """Whether ``text`` opens a table, template call or tag that it does not close."""
    lines = text.split("\n")
    tables = sum(line.lstrip(":").lstrip().startswith("{|") for line in lines) - sum(
        line.lstrip().startswith("|}") for line in lines)
    tags: collections.Counter[str] = collections.Counter()
    for closing, name, empty in BLOCK_TAGS.findall(text):
        tags[name.lower()] += 0 if empty else -1 if closing else 1
    return tables > 0 or text.count("{{") > text.count("}}") or any(n > 0 for n in tags.values())


def topic_section(ctx: ToolContext, talk: str, text: str, topic: str) -> Section:
    """The section of a talk page that ``topic`` names: by its heading (its '==' markup
    optional), else by its number. The lead, section 0, is no topic."""
    sections = wikitext_sections(text, ctx.site.syntax)
    wanted = heading_given(topic)
    listed = section_list(numbered_headings(sections)) or "none"
    named = ([s for s in sections if s.heading == wanted]  # else as get-page-sections shows it, case aside
             or [s for s in sections if heading_key(s.heading) == heading_key(wanted)]
             or [s for s in sections if heading_key(s.heading, marks=False) == heading_key(wanted, marks=False)])
    if len(named) > 1:
        raise invalid_input(f"{len(named)} topics of {talk!r} are headed {wanted!r} (sections "
                            f"{', '.join(str(s.number) for s in named)}); pass the section number as topic.")
    if named:
        return named[0]
    if wanted.isdigit() and int(wanted) == 0:
        raise invalid_input(f"Topic 0 is the lead of {talk!r}, the text above its first heading, which is no "
                            f"topic; nothing was saved. Its topics: {listed}. To start one, use add-talk-topic.")
    if numbered := next((s for s in sections if wanted.isdigit() and s.number == int(wanted)), None):
        return numbered
    raise not_found(f"{talk!r} on {ctx.wiki.key} has no topic {topic!r}. Its topics: {listed}. "
                    "To start one, use add-talk-topic.")


def answered_comment(comments: list[TalkComment], reply_to: str, talk: str,
                     section: Section) -> TalkComment:
    """The comment that ``reply_to`` names: by its first words, else by its author and time."""
    wanted = " ".join(reply_to.split()).casefold()
    found = ([c for c in comments if c.words.casefold().startswith(wanted)]
             or [c for c in comments if signed_so(c, wanted)])
    if len(found) == 1:
        return found[0]
    candidates = "; ".join(f"{c.author}, {c.time}: {c.words[:60]}" for c in (found or comments)) or "none"
    where = f"topic {section.number} ({heading_plain(section.heading)}) of {talk!r}"
    if found:
        raise invalid_input(f"replyTo matches {len(found)} comments in {where}: {candidates}. Give more of "
                            "the comment's first words, or its author and time.")
    raise not_found(f"No comment in {where} starts with {reply_to!r} or is signed so. Its comments: "
                    f"{candidates}. Pass one's author and time, or its first words, as replyTo.")


def signed_so(comment: TalkComment, wanted: str) -> bool:
    """Whether ``wanted`` (casefolded) names the comment by its signature: its author's user name
    or shown name (alone, or as User:Name), its time alone, or a name with the time."""
    names = {comment.author.casefold(), comment.shown.casefold()} - {""}
    when = comment.time.rsplit("(", 1)[0].strip().casefold()
    name = re.sub(r"^[^\d:][^:]*:\s*", "", wanted)  # User:Dave, Benutzer:Dave
    return (name in names or wanted in (when, comment.time.casefold())
            or (any(n in wanted for n in names) and when in wanted))


def discussion_tools_id(ctx: ToolContext, talk: str, latest: int, whole: str, section: str,
                        span: tuple[int, int], comment: TalkComment) -> str | None:
    """The DiscussionTools ID of ``comment``: the one of its author's comments in the page
    that comes as many after the others as it does here. None if the two readings differ."""
    info = ctx.client.get({"action": "discussiontoolspageinfo", "page": talk, "oldid": latest,
                           "prop": "threaditemshtml"}).get("discussiontoolspageinfo", {})

    def flat(found: list[dict[str, Any]]) -> Iterable[dict[str, Any]]:
        for item in found:
            yield item
            yield from flat(item.get("replies") or [])
    by_author = [item.get("id") for item in flat(info.get("threaditemshtml") or [])
                 if item.get("type") == "comment" and title_text(ctx.site, str(item.get("author", ""))) ==
                 comment.author]
    before = whole.encode()[:span[0]].decode() + "\n".join(section.split("\n")[:comment.last])
    earlier = sum(1 for c in talk_comments(ctx.site, before.split("\n")) if c.author == comment.author)
    return str(by_author[earlier]) if earlier < len(by_author) else None


def reply_with_discussion_tools(ctx: ToolContext, talk: str, latest: int, comment_id: str, text: str,
                                summary: str | None) -> str:
    """Saves a reply through DiscussionTools, which places and indents it as its reply tool does."""
    params = {"action": "discussiontoolsedit", "paction": "addcomment", "page": talk,
              "commentid": comment_id, "wikitext": text, "summary": summary, "tags": change_tags(ctx),
              "nocontent": True}
    data, landed = settle_edit(ctx, lambda: ctx.client.write(params), talk, latest, summary, {"text": text})
    answer = landed or data.get("discussiontoolsedit") or {}
    if "newrevid" not in answer:
        raise upstream_failure(f"The wiki did not save the reply ({answer or 'no reason'}). "
                               + NEXT_STEP["upstream_failure"])
    status = after_lost_answer("Saved.", EDIT_SHOWN_ONCE) if answer.get("lost") else "Saved."
    return saved_lines(ctx, talk, answer["newrevid"], answer.get("oldrevid") or latest, status)
