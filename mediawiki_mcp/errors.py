"""The closed error vocabulary: the seven categories, MediaWiki's error codes mapped to them, the next
step each suggests, and WikiError, which every refusal raises."""
from __future__ import annotations

import functools
import re
import typing
from typing import Literal

#: The kinds of failure a caller is told about: each error is ``category: message``.
ErrorCategory = Literal["not_found", "permission_denied", "invalid_input", "conflict",
                        "authentication", "rate_limited", "upstream_failure"]


#: MediaWiki API error codes and the category each one means for a caller (the codes of
#: MediaWiki's includes/api/i18n/en.json, and those the API takes from core messages).
#: Anything not listed becomes upstream_failure with MediaWiki's own text kept.
MW_ERROR_CATEGORIES: dict[str, ErrorCategory] = {
    **dict.fromkeys((
        "missingtitle", "missingtitle-byname", "nosuchrevid", "nosuchpageid", "nosuchsection",
        "nosuchsection-what", "rvnosuchsection", "nosuchuser", "nosuchuserid", "nosuchlogid", "nosuchrcid",
        "missingfile", "filenotfound", "filedoesnotexist", "nodeleteablefile", "cantdelete",
        "cantundelete", "nodeletedrevs", "undelete-no-results", "badid_rvstartid", "badid_rvendid",
        "missingrev-pageid", "missingrev-title", "missingcontent-pageid", "missingcontent-revid",
        "compare-nofromrevision", "compare-notorevision", "compare-nosuchfromsection",
        "compare-nosuchtosection", "changecontentmodel-missingtitle", "stashedfilenotfound",
    ), "not_found"),
    **dict.fromkeys((
        "permissiondenied", "permissiondenied-generic", "protectedpage", "protectedtitle",
        "protectednamespace", "protectednamespace-interface", "cascadeprotected", "blocked",
        "blocked-partial", "autoblocked", "systemblocked", "blockedfrommail", "writeapidenied",
        "noapiwrite", "cantcreate", "cantcreate-anon", "noimageredirect", "noimageredirect-anon",
        "noedit", "noedit-anon", "cantedit", "customcssprotected", "customjsprotected",
        "customjsonprotected", "mycustomcssprotected", "mycustomjsprotected", "mycustomjsonprotected",
        "sitecssprotected", "sitejsprotected", "sitejsonprotected", "spamblacklist", "spamdetected",
        "spamprotectionmatch",
        "titleblacklist-forbidden", "hookaborted", "cantmove", "cantmove-anon", "cantmovefile",
        "bigdelete", "badaccess-groups", "confirmemail", "upload-disabled", "uploaddisabled",
        "copyuploaddisabled", "copyuploadbaddomain", "copyuploadbadurl", "cantchangecontentmodel",
        "tags-apply-no-permission", "cantoverwrite-sharedfile", "fileexists-sharedrepo-perm",
        "cannotviewtitle", "cantview-deleted-revision-content", "cantview-deleted-comment",
        "siteinfo-includealldenied", "readapidenied", "notvisiblerev",
        # only the configured tags are sent: the operator's to fix, not the model's
        "badtags", "tags-apply-not-allowed-one", "tags-apply-not-allowed-multi",
    ), "permission_denied"),
    **dict.fromkeys((
        "invalidtitle", "cidrtoobroad",
        "missingparam", "missingparam-one-of", "missingparam-at-least-one-of", "badvalue",
        "badvalue-notmultivalue", "unrecognizedvalue", "invalidsection", "badcontinue", "toomanyvalues",
        "paramempty", "invalidparammix", "invalidparammix-cannotusewith", "invalidparammix-mustusewith",
        "multival-only-one-of", "notanarticle", "baddatatype", "badinteger", "integeroutofrange-abovemax",
        "integeroutofrange-belowminimum", "maxbytes", "maxchars", "unknown_action", "unknownaction",
        "nosuchnamespace", "badmd5", "contenttoobig", "selfmove", "immobilenamespace",
        "immobile-source-namespace", "immobile-target-namespace", "immobile-source-page",
        "immobile-target-page", "nonfilenamespace", "nonfile-cannot-move-to-file", "filetypemismatch",
        "imageinvalidfilename", "bad-target-model", "contentnotallowedhere", "pagecannotexist",
        "unsupportednamespace", "invalid-content-data", "invalid-json-data", "contentserializationexception",
        "no-direct-editing", "changecontentmodel-nodirectediting", "changecontentmodel-cannot-convert",
        "changecontentmodel-cannotbeused", "badformat", "badformat-generic", "unsupportedrepo",
        "invalidexpiry", "pastexpiry", "toofewexpiries", "badexpiry", "badexpiry-past", "badexpiry-duration",
        "invalid-file-key", "illegal-filename",
        "filetype-banned", "filetype-missing", "filename-tooshort", "windows-nonascii-filename",
        "bad-prefix", "verification-error", "empty-file", "file-too-large", "toolong", "nofile",
        "mustpostparams", "missingtitle-createonly", "invalidcategory", "invaliduser", "baduser",
        "notarget", "nosuchtag", "badparams", "unknownparam", "invalidlang", "emptypage", "revwrongpage",
        "appendnotsupported", "sectionsnotsupported", "sectionsnotsupported-what", "contentmodel-mismatch",
        "badtimestamp", "show", "emptynewsection", "missingcommenttext", "redirect-appendonly",
        "edit-invalidredirect", "compare-maintextrequired", "compare-no-title", "compare-notext",
        "compare-relative-to-deleted", "compare-relative-to-nothing", "invalidurlparam", "urlparamnormal",
        "badurl", "protect-invalidaction", "protect-invalidlevel", "revisions-norevids",
        "revisions-singlepage", "multpages", "stashzerolength", "stashinvalidfile", "cantrollback",
        "onlyauthor",
    ), "invalid_input"),
    **dict.fromkeys((
        "editconflict", "articleexists", "redirectexists", "create-titleexists", "pagedeleted",
        "fileexists-no-change", "fileexists-forbidden", "fileexists-shared-forbidden", "overwrite",
        "duplicate-archive", "exists", "alreadyrolled", "filedupe", "duplicate", "undofailure",
    ), "conflict"),
    **dict.fromkeys((
        "assertuserfailed", "assertbotfailed", "assertnameduserfailed", "assertanonfailed", "notloggedin",
        "mwoauth-invalid-authorization", "mwoauth-invalid-authorization-invalid-user", "login-required",
        "mustbeloggedin", "mustbeloggedin-generic", "mustbeloggedin-uploadstash", "reauthenticate",
        "cannotreauthenticate", "badtoken", "notoken",
    ), "authentication"),
    **dict.fromkeys((
        "ratelimited", "maxlag", "actionthrottled", "actionthrottledtext", "concurrency-limit",
    ), "rate_limited"),
}


#: Codes of failures that a later retry can fix: the wiki is locked for maintenance, or broke
#: down midway (an internal exception, its file or lock backend, a fetch that timed out).
#: Every other failure says why, and that retrying the same call changes nothing.
MW_RETRY_LATER = ("readonly", "internal_api_error_", "backend-fail-", "lockmanager-fail-",
                  "exceptioncaught", "unknownerror", "stashfailed", "upload-inprogress", "http-timed-out",
                  "http-curl-error", "cirrussearch-backend-error")


RETRY_LATER = "Retry later; tell the user if it persists."


#: What the caller can do next, by category: the standard last sentence of an error's message.
NEXT_STEP: dict[ErrorCategory, str] = {
    "not_found": "Check the title or ID; search-page-by-prefix or search-page finds existing pages.",
    "permission_denied": "Tell the user; retrying as the same account changes nothing.",
    "invalid_input": "Change the call as the message says; the same call fails again.",
    "conflict": "Read the current state again before deciding what to do.",
    "authentication": "Tell the user to check the wiki's credentials.",
    "rate_limited": "Wait a minute before retrying.",
    "upstream_failure": "Tell the user: the same call fails again until the cause is fixed on the wiki.",
}


#: The next step when the wiki refuses the change tags of the configuration (WikiConfig.tags).
TAGS_NEXT_STEP = ("The change tags come from this server's configuration (tags), not from the call: tell the "
                  "user that the operator must define them on the wiki (Special:Tags) or take them out of the "
                  "configuration. No call changes this.")


#: What to do next for MediaWiki codes whose category alone does not say enough.
MW_NEXT_STEP = {
    **dict.fromkeys(("badtags", "tags-apply-not-allowed-one", "tags-apply-not-allowed-multi",
                     "tags-apply-no-permission"), TAGS_NEXT_STEP),
    "cidrtoobroad": "Narrow the range (a larger number after the /) to what the wiki accepts, or ask for "
                    "several narrower ranges; only the wiki's operator can widen its limit.",
    "articleexists": "To change the existing page, use update-page; otherwise pick another title.",
    "editconflict": "Someone else changed the page since that revision: read it again with get-page, "
                    "redo the change on the new text, and tell the user what changed.",
    "pagedeleted": "The page was deleted after it was read; tell the user (undelete-page restores it).",
    "badtoken": "The wiki refused the edit token even after a fresh one; tell the user to check the "
                "wiki's credentials.",
    **dict.fromkeys(("protectedpage", "cascadeprotected"),
                    "The page is protected; ask a wiki administrator, since this account cannot edit it."),
    "blocked": "The account is blocked from editing; tell the user.",
    "readonly": "The wiki is locked for maintenance; retry later.",
    "missingtitle": "Check the title; search-page-by-prefix finds existing pages, create-page makes new ones.",
    "nosuchrevid": "get-page-history lists a page's revision IDs.",
    "nosuchsection": "The page exists; its sections are numbered from 1 in the order of its headings "
                     "(0 is the lead).",
    "pagecannotexist": "Pages in this namespace (such as Special:) cannot be created or edited; pick "
                       "another title.",
    "unsupportednamespace": "Pages in this namespace (such as Special:) cannot be changed; pick another "
                            "title.",
    "invalid-json-data": "Fix the JSON, or create the page with another contentModel.",
    "invalid-content-data": "Fix the text for the page's content model, or pass another contentModel.",
    "nonfile-cannot-move-to-file": "Only files move into the File namespace; pick a title in another one.",
    "nonfilenamespace": "A file can move only to another title in the File namespace.",
    "filetypemismatch": "A file keeps its type when it moves: give the new title the file's extension.",
    "immobile-target-namespace": "Pages cannot be moved into that namespace; pick a title in another one.",
    "selfmove": "fromTitle and toTitle name the same page; nothing needs moving.",
    "verification-error": "Upload a file whose extension matches its content, of a type the wiki accepts.",
    "cantrollback": "Every revision of the page is by that user, so there is nothing to return to; to remove "
                    "the page, use delete-page.",
    # Saves the wiki refuses for its own reasons: the same text is refused again, whoever sends it.
    **dict.fromkeys(("spamprotectionmatch", "spamdetected"),
                    "Nothing was saved: the wiki's spam filter matched the text named. Take it out or reword "
                    "it, then save again; only a wiki administrator can change the filter."),
    "spamblacklist": "Nothing was saved: the wiki does not accept links to the site named. Take the link out "
                     "(or give the address as plain text in <nowiki>), then save again; a wiki administrator "
                     "can allow the site.",
    "protectedtitle": "Nothing was saved: the title is protected against creation. Ask a wiki administrator "
                      "to create the page, or pick another title.",
    "titleblacklist-forbidden": "Nothing was saved: the wiki does not allow this title. Pick another title, "
                                "or ask a wiki administrator.",
    **dict.fromkeys(("abusefilter-disallowed", "abusefilter-warning"),
                    "Nothing was saved: an abuse filter of the wiki stopped the edit for the reason given. "
                    "Tell the user that reason and change the edit; a wiki administrator can review the "
                    "filter."),
}


class WikiError(Exception):
    """A failure a tool's caller is told about (configuration that cannot work is a ConfigError,
    at start), made by the factory of its category below: the raiser's ``message``, MediaWiki's
    ``code`` when the API refused, and what dispatch adds where the call ends: the ``wiki`` it
    happened on, where several serve, and ``notes`` after the message (the tools it names that
    are not offered, a person's account to fix). ``str(error)`` renders them once into the text
    the model receives: ``category: message``. Code that handles one branches on ``category`` or
    ``code``, never on the message."""

    def __init__(self, category: ErrorCategory, message: str, code: str = "") -> None:
        assert category in typing.get_args(ErrorCategory), category
        super().__init__(category, message)
        self.category = category
        self.message = message
        self.code = code
        self.wiki = ""
        self.notes: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = " ".join((self.message, *self.notes))
        if self.wiki and not re.search(rf"(?<![\w.-]){re.escape(self.wiki)}(?![\w-]|\.\w)", text):
            text = f"On the wiki {self.wiki}: {text}"  # unless the message names it already
        return f"{self.category}: {text}"


class ResponseLost(WikiError):
    """A write whose answer never arrived (timeout, reset, a gateway error page):
    the wiki may or may not have saved it, so it is never resent blindly."""

    def __init__(self, message: str) -> None:
        super().__init__("upstream_failure", message)


#: One factory per category: ``raise not_found(message)``, or ``not_found(message, code)`` for an
#: error that MediaWiki answered with ``code``. NEXT_STEP holds each category's usual next step.
not_found = functools.partial(WikiError, "not_found")
permission_denied = functools.partial(WikiError, "permission_denied")
invalid_input = functools.partial(WikiError, "invalid_input")
conflict = functools.partial(WikiError, "conflict")
authentication = functools.partial(WikiError, "authentication")
rate_limited = functools.partial(WikiError, "rate_limited")
upstream_failure = functools.partial(WikiError, "upstream_failure")


def error_from_api(code: str, text: str, wiki: str = "") -> WikiError:
    """Maps a MediaWiki API error to a WikiError, keeping MediaWiki's words and adding what
    to do next: only a failure that a later retry can fix says to retry."""
    category = MW_ERROR_CATEGORIES.get(code)
    if category is None and code.startswith(("abusefilter-", "spamblacklist", "titleblacklist")):
        category = "permission_denied"
    if code == "readonly":
        text = f"The wiki is in read-only mode: {text}"
    text = " ".join(text.split()) or code
    where = f" ({wiki})" if wiki else ""
    step = MW_NEXT_STEP.get(code) or (RETRY_LATER if code.startswith(MW_RETRY_LATER)
                                      else NEXT_STEP[category or "upstream_failure"])
    if category is None:
        return upstream_failure(f"MediaWiki error {code}{where}: {text} {step}", code)
    return WikiError(category, f"{text}{where} [{code}] {step}", code)
