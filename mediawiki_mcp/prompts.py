"""Prompts: the workflows people repeat, as user messages that walk a model through this server's
tools, and completion of their arguments."""
from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping

from .dispatch import NO_PERSON, Caller, Session, offered_tools
from .errors import invalid_input
from .render import wiki_timestamp
from .state import ServerState

# A prompt is a user message that walks the model through a job with this server's tools
# (clients show prompts as commands). Each names the tools it uses, and is listed only while
# all of them are offered to the session, so no prompt sends the model to a tool it lacks.

@dataclasses.dataclass(frozen=True)
class PromptArg:
    """An argument of a prompt. ``completes``: what completion/complete offers for it (a
    ``page`` or ``category`` of the wiki, by prefix; a configured ``wiki`` key), None: nothing."""
    name: str
    description: str
    required: bool = True
    completes: str | None = None


@dataclasses.dataclass(frozen=True)
class Prompt:
    """A prompt: its text is the user message, its arguments in braces (``{title}``) and
    ``{where}`` for the wiki; ``tools``: every tool the text names."""
    name: str
    title: str
    description: str
    arguments: tuple[PromptArg, ...]
    tools: tuple[str, ...]
    text: str


TITLE_PROMPT_ARG = PromptArg("title", "Page title.", completes="page")


#: Listed only where there are several wikis, as tools list their wiki argument.
WIKI_PROMPT_ARG = PromptArg("wiki", "Wiki key; omitted: the default wiki.", required=False, completes="wiki")


PROMPTS = {prompt.name: prompt for prompt in (
    Prompt("review-recent-changes", "Review recent changes",
           "Patrols what changed since a time: flags likely vandalism and suggests undoing it.",
           (PromptArg("since", "From when: an ISO 8601 time, 2 hours ago, yesterday."),),
           ("get-recent-changes", "compare-pages", "undo-edit"),
           "Review the changes made {where} since {since}, as a patroller would.\n"
           "1. Call get-recent-changes with start={since_arg} to list them; follow its continueFrom marker "
           "until the list ends.\n"
           "2. For each change that looks doubtful (an anonymous or new account, a large removal, blanking, "
           "insults, spam links, an odd summary), call compare-pages with toRevision (its revision ID) and "
           "fromRevision (the revision before it) to read the diff.\n"
           "3. Flag likely vandalism and say why. For each, suggest undo-edit with its revision ID, but undo "
           "nothing before I confirm.\n"
           "Answer with a table: page | revision ID | user | verdict (fine, doubtful, vandalism) | suggested "
           "action."),
    Prompt("fix-section", "Fix a section",
           "Reads a page's outline and one section, then proposes a corrected section as a dry-run edit.",
           (TITLE_PROMPT_ARG, PromptArg("section", "Section number or heading.")),
           ("get-page-sections", "get-page", "update-page"),
           "Help me fix the section {section} of the page {title_arg} {where}.\n"
           "1. Call get-page-sections with title={title_arg} to read the page's outline and find that section.\n"
           "2. Call get-page with title={title_arg} and its section to read the section's wikitext whole.\n"
           "3. Say what is wrong with it (facts, wording, formatting, broken markup, claims without a "
           "reference) and write the corrected wikitext.\n"
           "4. Call update-page with title={title_arg}, that section, the corrected text as source and "
           "dryRun=true, and show me the diff. Save it (dryRun=false, with an edit summary) only after I "
           "confirm."),
    Prompt("summarise-talk-page", "Summarise a talk page",
           "Summarises a talk page: its topics, who said what, and the questions still open.",
           (PromptArg("title", "The talk page, or the page it discusses.", completes="page"),),
           ("get-page-sections", "get-page"),
           "Summarise the talk page of {title_arg} {where} (the page itself if it is a talk page, else its "
           "talk page: Talk:, User talk:, and so on).\n"
           "1. Call get-page-sections with the talk page's title to list its topics.\n"
           "2. Call get-page with that title (a section at a time when the page is long) to read them.\n"
           "3. For each topic: what it is about, who said what (by their signatures), what was agreed, and "
           "what is still open.\n"
           "End with the open questions that need an answer, and who asked them."),
    Prompt("check-references", "Check a page's references",
           "Checks a page's references: incomplete or duplicated ones, and claims that lack one.",
           (TITLE_PROMPT_ARG,),
           ("find-in-page", "get-page"),
           "Check the references of the page {title_arg} {where}.\n"
           "1. Call find-in-page with title={title_arg} and find=\"<ref\" to locate every reference, then "
           "get-page with title={title_arg} to read the text they support.\n"
           "2. For each reference: is it complete (author or publisher, title, date, a URL where there is "
           "one), is it a duplicate that should be one named reference, is it still in the right place? "
           "Note each claim that needs a reference and has none.\n"
           "3. List the problems as: section | reference or claim | problem | fix, and propose the "
           "corrected wikitext. Change nothing on the wiki."),
    Prompt("survey-category", "Survey a category",
           "Reads a category's members and finds those that look out of place in it.",
           (PromptArg("category", "Category name, with or without its prefix.", completes="category"),),
           ("get-category-members", "get-pages"),
           "Survey the category {category_arg} {where}.\n"
           "1. Call get-category-members with category={category_arg}; follow its continueFrom marker until "
           "the list ends.\n"
           "2. Call get-pages with up to 50 of its pages at a time to read their leads.\n"
           "3. Say what the category is for, list the pages that look out of place in it (and why), and the "
           "subcategories that overlap."),
)}


def offered_prompts(state: ServerState, session: Session | None = None) -> list[Prompt]:
    """The prompts listed to a session: those whose every tool it is offered."""
    return prompts_using(spec.name for spec in offered_tools(state, session))


def prompts_using(tools: Iterable[str]) -> list[Prompt]:
    """The prompts whose every tool is among ``tools``."""
    offered = set(tools)
    return [prompt for prompt in PROMPTS.values() if offered.issuperset(prompt.tools)]


def prompt_arguments(state: ServerState, prompt: Prompt) -> tuple[PromptArg, ...]:
    """A prompt's arguments as listed: ``wiki`` too where there are several wikis."""
    return prompt.arguments + ((WIKI_PROMPT_ARG,) if len(state.wikis) > 1 else ())


def listed_prompt(state: ServerState, name: str, session: Session | None) -> Prompt:
    """The prompt of that name, refused (invalid_input) unless it is listed to the session."""
    listed = offered_prompts(state, session)
    prompt = next((p for p in listed if p.name == name), None)
    if prompt is None:
        names = ", ".join(p.name for p in listed) or "none"
        why = "is not offered with this server's configuration" if name in PROMPTS else "does not exist"
        raise invalid_input(f"The prompt {name!r} {why}; the prompts listed are: {names}.")
    return prompt


#: The longest value a prompt's argument takes (a title is at most 255 bytes).
PROMPT_ARG_MAX_CHARS = 500


def prompt_text(state: ServerState, name: str, arguments: Mapping[str, str] | None,
                session: Session | None = None) -> tuple[Prompt, str]:
    """A listed prompt and its user message, the arguments checked and filled in."""
    prompt = listed_prompt(state, name, session)
    accepted = prompt_arguments(state, prompt)
    given = {k: v.strip() for k, v in (arguments or {}).items()}
    if unknown := sorted(given.keys() - {a.name for a in accepted}):
        raise invalid_input(f"The prompt {name} takes no argument {', '.join(map(repr, unknown))}; its "
                            f"arguments: {', '.join(a.name for a in accepted)}.")
    if missing := [a.name for a in accepted if a.required and not given.get(a.name)]:
        raise invalid_input(f"The prompt {name} needs {', '.join(missing)}.")
    # a value goes into the message as it is: a line break would start steps of its own
    if odd := [k for k, v in given.items()
               if len(v) > PROMPT_ARG_MAX_CHARS or re.search(r"[\x00-\x1f\x7f]", v)]:
        raise invalid_input(f"The prompt {name}'s {', '.join(odd)} must be one line of at most "
                            f"{PROMPT_ARG_MAX_CHARS} characters.")
    if "since" in given:
        wiki_timestamp(given["since"], "since")  # refused here as get-recent-changes would refuse it
    key = state.resolve_wiki(given.get("wiki"))
    where = f"on the wiki {key}" + (f" (pass wiki={json.dumps(key)} to every tool)" if len(state.wikis) > 1
                                    else "")
    quoted = {f"{k}_arg": json.dumps(v, ensure_ascii=False) for k, v in given.items()}
    return prompt, prompt.text.format_map({**given, **quoted, "where": where})


#: The most values one completion answers with (the MCP limit).
COMPLETION_MAX_VALUES = 100


def completion_values(state: ServerState, kind: str | None, value: str, key: str,
                      caller: Caller = NO_PERSON) -> tuple[list[str], bool]:
    """The values completion/complete offers for an argument that ``kind`` names (PromptArg's
    ``completes``), beginning with ``value``, and whether there are more: wiki keys from the
    configuration, pages and categories from one prefix search on the wiki ``key`` (the one
    the prompt's wiki argument names, else the default), as ``caller`` reads it."""
    if kind == "wiki":
        keys = [key for key in state.wikis if key.startswith(value)]
        return keys[:COMPLETION_MAX_VALUES], len(keys) > COMPLETION_MAX_VALUES
    if kind not in ("page", "category"):
        return [], False
    wiki, client = state.wiki_and_client(key)
    client = caller.client(state, wiki, client)
    namespace = client.site.namespace_of(value)
    prefix = value.partition(":")[2] if namespace == 14 else value
    if kind == "category":
        query = {"list": "allcategories", "acprefix": prefix.lstrip(), "aclimit": COMPLETION_MAX_VALUES}
    elif not (value.partition(":")[2] if namespace else value).strip():
        # nothing typed yet, or a namespace alone, where the search finds nothing: its first pages
        query = {"list": "allpages", "apnamespace": namespace, "aplimit": COMPLETION_MAX_VALUES}
    else:
        query = {"list": "prefixsearch", "pssearch": value, "pslimit": COMPLETION_MAX_VALUES}
    data = client.get({"action": "query", **query})
    found = data.get("query", {}).get(query["list"]) or []
    lead = value[:len(value) - len(prefix)]  # "Category:" when the value has it, as the values then do
    values = [lead + c.get("category", "") if kind == "category" else c["title"] for c in found]
    return values, "continue" in data
