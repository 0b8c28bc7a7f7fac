"""What a wiki says about itself (namespaces, magic words, extensions, rights) and what an account
may do there: the facts the tools read from siteinfo and userinfo."""
from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class Syntax:
    """What a wiki's preprocessor knows besides core wikitext: its tags (core and extensions',
    from siprop=extensiontags) and whether -{ }- language conversion markup is on."""
    tags: frozenset[str] = frozenset({"pre", "nowiki", "gallery", "indicator", "langconvert"})
    lang_conversion: bool = True


CORE_SYNTAX = Syntax()


@dataclasses.dataclass(frozen=True)
class SiteInfo:
    """What the client learns once per wiki (action=query&meta=siteinfo)."""
    name: str
    generator: str
    server: str           # scheme and host, never protocol-relative
    article_path: str     # "/wiki/$1"
    script_path: str      # "/w"
    lang: str
    main_page: str
    read_only: bool
    read_only_reason: str
    namespaces: dict[int, str]          # ID -> local name ("" for the main namespace)
    namespace_ids: dict[str, int]       # lower-cased local, canonical and alias names -> ID
    raw: dict[str, Any]
    syntax: Syntax = CORE_SYNTAX  # for section numbers
    #: Protection: the kinds, the levels and those that cascade (siprop=restrictions)
    restrictions: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    content_namespaces: tuple[int, ...] = (0,)  # what search-page searches by default
    #: The local names of Special:Contributions, which an IP's signature links (Spezial:Beiträge/…)
    contributions_aliases: tuple[str, ...] = ()

    def page_url(self, title: str) -> str:
        path = urllib.parse.quote(title.replace(" ", "_"), safe=";@$!*(),/~:")
        return self.server + self.article_path.replace("$1", path)

    def index_url(self, **params: Any) -> str:
        return f"{self.server}{self.script_path}/index.php?" + urllib.parse.urlencode(params)

    def namespace_list(self) -> str:
        """``0 (Main), 1 Talk, ...``: the namespaces pages can be in, with their IDs."""
        return ", ".join(f"{i} {n or '(Main)'}" for i, n in sorted(self.namespaces.items()) if i >= 0)

    def namespace_of(self, title: str) -> int:
        prefix, sep, _ = title.partition(":")
        if not sep:
            return 0
        return self.namespace_ids.get(prefix.strip().replace("_", " ").lower(), 0)

    @classmethod
    def from_api(cls, query: dict[str, Any], api_url: str) -> SiteInfo:
        general = query.get("general", {})
        # a protocol-relative $wgServer (as on Wikimedia wikis) takes the API's scheme; none, its origin
        server = urllib.parse.urljoin(api_url, general.get("server") or "/")
        spaces = list((query.get("namespaces") or {}).values())
        names = [(ns.get(key), int(ns["id"])) for ns in spaces for key in ("name", "canonical")]
        names += [(alias.get("alias"), int(alias["id"])) for alias in query.get("namespacealiases") or []]
        tags = frozenset(tag.strip("<>").lower() for tag in query.get("extensiontags") or [])
        return cls(
            name=general.get("sitename", ""),
            generator=general.get("generator", ""),
            server=server.rstrip("/"),
            article_path=general.get("articlepath") or "/index.php?title=$1",
            script_path=general.get("scriptpath", ""),
            lang=general.get("lang", ""),
            main_page=general.get("mainpage", ""),
            read_only=bool(general.get("readonly")),
            read_only_reason=general.get("readonlyreason", ""),
            namespaces={int(ns["id"]): ns.get("name", "") for ns in spaces},
            namespace_ids={name.lower(): nsid for name, nsid in names if name},
            raw=general,
            syntax=Syntax(tags or CORE_SYNTAX.tags, general.get("langconversion") is not False),
            restrictions=query.get("restrictions") or {},
            content_namespaces=tuple(sorted(int(ns["id"]) for ns in spaces if ns.get("content"))) or (0,),
            contributions_aliases=tuple(alias for page in query.get("specialpagealiases") or []
                                        if page.get("realname") == "Contributions"
                                        for alias in page.get("aliases") or []),
        )


@dataclasses.dataclass(frozen=True)
class Account:
    """Whom a client acts as on its wiki and what it may do there (meta=userinfo): the rights
    of its groups, narrowed by the grants of its bot password or token."""
    name: str
    anonymous: bool
    groups: tuple[str, ...]
    rights: frozenset[str]

    def can(self, right: str) -> bool:
        """Whether the account has the right (``a|b``: either of two)."""
        return any(r in self.rights for r in right.split("|"))


#: Rights that tools check before they act: what each lets an account do, and the bot
#: password grant (Special:BotPasswords) that carries it.
RIGHTS = {
    "edit": ("edit pages", "Edit existing pages"),
    "createpage": ("create pages", "Create, edit, and move pages"),
    "move": ("move pages", "Create, edit, and move pages"),
    "move-subpages": ("move subpages", "Create, edit, and move pages"),
    "suppressredirect": ("move pages without leaving a redirect", "Create, edit, and move pages"),
    "delete": ("delete pages", "Delete pages, revisions, and log entries"),
    "undelete": ("restore deleted pages", "Delete pages, revisions, and log entries"),
    "upload": ("upload files", "Upload new files"),
    "reupload": ("upload new versions of files", "Upload, replace, and move files"),
    "rollback": ("roll back edits", "Rollback changes to pages"),
    "protect": ("change the protection of pages", "Protect and unprotect pages"),
    "viewmywatchlist": ("read the watchlist", "View your watchlist"),
    "editmywatchlist": ("change the watchlist", "Edit your watchlist"),
}


#: What a refused call can do instead, for rights that have a way round.
WITHOUT_RIGHT = {
    "rollback": "Without it, undo-edit reverts the same edits: revisionId the latest, oldestRevisionId the "
                "first of the run.",
}


#: Arguments whose values the wiki defines, as the API module and parameter that take them (paraminfo).
#: A wiki may add its own values (an extension's log type, content model): checked before a call sends.
CHOICES = {"content model": ("edit", "contentmodel"), "log type": ("query+logevents", "type")}


#: A parameter whose presence says what the wiki does: watch's expiry ($wgWatchlistExpiry).
WATCH_EXPIRY = ("watch", "expiry")


#: MediaWiki's own values of CHOICES' arguments, which every wiki takes: sent unchecked, and named in
#: the tools' schemas (the log types most asked for: the first seven).
STANDARD_CHOICES = {
    "content model": ("wikitext", "javascript", "css", "json", "text"),
    "log type": ("delete", "move", "protect", "upload", "block", "rights", "newusers", "create", "merge",
                 "import", "patrol", "tag", "managetags", "contentmodel", "suppress")}


SITEINFO_PARAMS = {"action": "query", "meta": "siteinfo",
                   "siprop": "general|namespaces|namespacealiases|extensiontags|restrictions|"
                            "specialpagealiases"}


#: The messages of the edit summaries the talk tools write: MediaWiki's for a new section
#: ("/* $1 */ new section"), DiscussionTools' for a reply ("Reply"; core has none).
SUMMARY_MESSAGES = ("newsectionsummary", "discussiontools-defaultsummary-reply")


#: The kinds of token write actions take (rollback and watch have their own), fetched in one request.
TOKEN_TYPES = ("csrf", "rollback", "watch")
