"""The tool registry: the @tool decorator, the parameters many tools share, each tool's schema
from its signature, and the checking of a model's arguments against it."""
from __future__ import annotations

import dataclasses
import functools
import inspect
import re
import typing
import urllib.parse
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from types import UnionType  # not `import types`: tools take an argument named types
from typing import TYPE_CHECKING, Annotated, Any, Literal

from .config import Config
from .errors import WikiError, invalid_input
from .render import utf8_len
from .settings import TOOLSETS

if TYPE_CHECKING:
    from .dispatch import Caller, Session
    from .state import ServerState


#: MediaWiki's own limit on a title, in bytes of UTF-8.
MAX_TITLE_BYTES = 255


#: The longest name a call may give (a wiki key, user name, change tag or log type) or time: MediaWiki
#: keeps names to 255 bytes. A longer value is refused before it is sent, or quoted in an answer.
MAX_NAME_CHARS = 255


#: The longest continueFrom: a marker's value holds a few titles, sort keys and IDs.
MAX_CONTINUATION_CHARS = 5000


#: Who confirms a client's guarded actions, as its tools/list says (confirmer): the model with
#: confirm=true, the person asked in the client, or no one (the operator wants the person, whom
#: this client cannot ask).
Confirmer = Literal["model", "person", "nobody"]


@dataclasses.dataclass(frozen=True)
class Arg:
    """A tool parameter's description and bounds, placed in its annotation."""
    description: str
    minimum: int | None = None
    maximum: int | None = None
    max_length: int | None = None
    # False: max_length is a cap a model does not write near (a key, a path, a URL, a whole text,
    # a summary), which check_text enforces and tools/list, paid on every turn, leaves out.
    max_length_listed: bool = True
    max_items: int | None = None
    title: bool = False  # a page title: non-empty, at most 255 bytes


def name_arg(description: str) -> Arg:
    """A name or time a call gives (user, tag, log type, start): capped at MAX_NAME_CHARS, unlisted."""
    return Arg(description, max_length=MAX_NAME_CHARS, max_length_listed=False)


@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    kind: Any        # str, int, bool, list, a tuple of allowed strings (an enum), or a frozenset of
                     # the types a value may have (int | str)
    item_kind: Any   # for lists
    arg: Arg
    required: bool
    default: Any


#: What a page write may do to the page's place on the account's watchlist (MediaWiki's watchlist).
WATCH_CHOICES = ("watch", "unwatch", "preferences", "nochange")


#: The arguments the registry adds to a tool's own, from its flags (guarded, continue_from, dry_run,
#: idempotency_key, watch, scoped), in this order. A tool function never declares them.
SHARED_PARAMS = {p.name: p for p in (
    Param("confirm", bool, None, Arg("true once the user agreed to what a call without it showed."), False,
          False),
    Param("continueFrom", str, None, Arg("From the marker.", max_length=MAX_CONTINUATION_CHARS,
                                         max_length_listed=False), False, None),
    Param("dryRun", bool, None, Arg("Returns the diff unsaved."), False, False),
    Param("idempotencyKey", str, None, Arg("Reuse on retry.", max_length=200,
                                           max_length_listed=False), False, None),
    Param("watch", WATCH_CHOICES, None, Arg("Default: preferences."), False, None),
    Param("wiki", str, None, Arg("Wiki key; omitted: the default wiki.", max_length=MAX_NAME_CHARS,
                                 max_length_listed=False), False, None))}


@dataclasses.dataclass(frozen=True)
class Quoted:
    """A setting as a description quotes it: ``{content_max_bytes:bytes}`` (a Config field and
    a unit) reads "50000 bytes by default (MCP_CONTENT_MAX_BYTES)" while the setting is at its
    default, naming the setting so that no model looks for an argument that changes it, and
    "20000 bytes" once the operator sets that; the unit ``MB`` counts whole millions of bytes."""
    value: Any
    default: Any
    setting: str = ""

    def __format__(self, unit: str) -> str:
        millions = unit == "MB" and self.value % 10**6 == 0
        text = f"{self.value // 10**6} MB" if millions else f"{self.value} {'bytes' if unit == 'MB' else unit}"
        return text + (f" by default ({self.setting})" if self.value == self.default else "")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Flags:
    """What ``@tool`` says of a tool besides its name, title and toolset. A ``read_only`` tool is
    not destructive and is idempotent; any other states ``destructive`` and ``idempotent``, never
    guessed. ``open_world``: it reaches beyond this server. Each other flag gives an argument or
    a gate:

    - ``scoped`` (the default): a ``wiki`` argument picks the wiki, and a write is refused on a
      wiki configured read-only. Off: it acts on no one wiki.
    - ``guarded``: a ``confirm`` argument (``ctx.confirmed``); unconfirmed, the tool raises a
      Preview instead of acting, which the person confirms where the client can ask them
      (run_guarded), else the model by calling again with confirm=true. ``shows``: what the
      Preview shows, which the description's sentence on confirming names (ToolSpec.description).
    - ``asks``: some of its calls are guarded actions (a save across pages, an undo of other
      people's edits...), with no ``confirm`` argument: while the person confirms (``ctx.asks``)
      and the call is not confirmed (``ctx.confirmed``: as_shown), the tool raises a Preview of
      one; elsewhere its own guard holds.
    - ``continue_from``, ``dry_run``: that argument, read as ``ctx.continue_from`` or
      ``ctx.dry_run``; ``dry_run_default``: dryRun unless the call passes false.
    - ``idempotency_key``: an ``idempotencyKey`` argument; a call repeating one with the
      same key and arguments returns its result, marked as a repeat, and runs nothing.
    - ``watch``: a ``watch`` argument, passed to MediaWiki as ``watchlist=ctx.watch``; watching
      or unwatching adds the editmywatchlist right.
    - ``needs_extension``: refused on a wiki without that extension, naming wikis with it.
    - ``rights``: refused for an account without them (``a|b``: either) at the tool's first
      use of ``ctx.client``, before anything is sent.
    - ``needs_upload_dirs``: of no use until the operator sets upload directories (--check).
    - ``offered(state)``: listed only while it holds.
    - ``in_session``: listed only to an MCP session (session_of), as what it does lasts for one.
    - ``live(state, session, caller)``: a sentence of the description built from the live state
      when tools/list is answered (load-toolset's toolsets), after the docstring's text.
    - ``see``: the description's routing sentence, ``{"for several pages": "get-pages"}``
      read "For several pages, use get-pages."; a clause whose tool (the value's first word)
      is not offered is left out."""
    read_only: bool
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool = True
    scoped: bool = True
    guarded: bool = False
    shows: str = ""
    asks: bool = False
    continue_from: bool = False
    dry_run: bool = False
    dry_run_default: bool = False
    idempotency_key: bool = False
    watch: bool = False
    needs_extension: str | None = None
    rights: tuple[str, ...] = ()
    needs_upload_dirs: bool = False
    offered: Callable[[ServerState], bool] | None = None
    in_session: bool = False
    live: Callable[[ServerState, Session | None, Caller], str] | None = None
    see: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def problem(self, name: str) -> str | None:
        """What the flags contradict, if anything: a write's hints are stated, never guessed."""
        if self.read_only and (self.destructive or self.idempotent is False or self.dry_run
                               or self.idempotency_key or self.watch or self.guarded or self.asks):
            return (f"{name} is read-only: not destructive, idempotent, no dryRun, idempotencyKey, watch or "
                    "confirm")
        if self.dry_run_default and not self.dry_run:
            return f"{name}: dry_run_default needs dry_run"
        if self.guarded != bool(self.shows):
            return f"{name}: a guarded tool says what its preview shows (shows=), and only a guarded one"
        if not self.read_only and (self.destructive is None or self.idempotent is None):
            return f"{name} is not read-only: state destructive= and idempotent="
        return None


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToolSpec(Flags):
    """A registered tool (see Registry.tool): what tools/list shows and what a call runs."""
    name: str
    title: str
    toolset: str                         # its group (TOOLSETS), offered as the operator chooses
    doc: str             # the description, quoting settings as {field:unit} (Quoted); {{ }} for braces
    fn: Callable[..., Any]

    @functools.cached_property
    def params(self) -> dict[str, Param]:
        """The function's own arguments, read when first needed: evaluating every tool's annotations
        at import would be a good part of the time a server takes to start."""
        return signature_params(self.fn)

    @property
    def arguments(self) -> dict[str, Param]:
        """Every argument the tool takes: its own, then those its flags add."""
        flags = {"confirm": self.guarded, "continueFrom": self.continue_from, "dryRun": self.dry_run,
                 "idempotencyKey": self.idempotency_key, "watch": self.watch, "wiki": self.scoped}
        shared = {name: p for name, p in SHARED_PARAMS.items() if flags[name]}
        if self.dry_run_default:
            shared["dryRun"] = dataclasses.replace(shared["dryRun"], default=True)
        return {**self.params, **shared}

    def description(self, config: Config | None = None, absent: Collection[str] = (), live: str = "",
                    confirmer: Confirmer = "model") -> str:
        """The description quoting ``config`` (None: defaults), then ``live`` (the live sentence), who
        confirms a guarded tool (``confirmer``), and routing (see) to tools not ``absent``."""
        text = self.doc.format_map({f.name: Quoted(getattr(config, f.name, f.default), f.default,
                                                   f.metadata.get("setting", ""))
                                    for f in dataclasses.fields(Config)})
        # The user confirms what a call without confirm showed them (Preview.answer asks the same),
        # which their request to act had not: so it is no confirmation, and the sentence says so.
        confirming = "" if not self.guarded else {
            "model": f"Without confirm=true it only shows {self.shows}; confirm=true acts, once the user "
                     "agreed to that (their request does not count).",
            "person": f"It first asks the user, showing {self.shows}, and acts only on their yes.",
            "nobody": "Refused for this client: the operator wants the user to confirm it in a client that "
                      "can ask them, and this one cannot."}[confirmer]
        routes = "; ".join(f"{when}, use {to}" for when, to in self.see.items()
                           if to.split()[0] not in absent)
        return " ".join(part for part in (text, live, confirming, routes[:1].upper() + routes[1:] + "."
                                          if routes else "") if part)

    def schema(self, unlisted: Iterable[str] = ()) -> dict[str, Any]:
        """The input schema without the shared arguments ``unlisted`` (which a call may still pass).
        Open (no ``additionalProperties: false``) to spare 29 bytes a tool on every turn:
        check_arguments refuses unknown arguments."""
        arguments = {name: p for name, p in self.arguments.items() if name not in unlisted}
        required = [name for name, p in arguments.items() if p.required]
        return {"type": "object", "properties": {name: param_schema(p) for name, p in arguments.items()},
                **({"required": required} if required else {})}


class Preview(Exception):
    """What a guarded tool would do, raised instead while the call is not confirmed: answered to the
    model, or put to the person (run_guarded). ``choices``: parts the person may pick (pages to
    save); ``wiki`` and ``account``: where and as whom, which run_tool adds for the question."""

    def __init__(self, nothing: str, would: str, choices: Sequence[str] = ()) -> None:
        super().__init__(nothing, would)
        self.nothing, self.would = nothing, would  # "Nothing was deleted.", "delete 'X' (...) from w."
        self.choices = tuple(choices)
        self.wiki = self.account = ""

    def answer(self, tool_name: str) -> WikiError:
        return invalid_input(f"{self.nothing} {tool_name} would {self.would} Ask the user to confirm, then "
                             f"call {tool_name} again with confirm=true.")


@dataclasses.dataclass(eq=False)
class Registry:
    """Tools by name, in tools/list's order: REGISTRY, unless a server (a test's) is given its own."""
    tools: dict[str, ToolSpec] = dataclasses.field(default_factory=dict)

    def tool(self, name: str, title: str, *, toolset: str,
             **flags: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Registers a tool function: its docstring is the description (quoting settings: Quoted), its
        parameters after the ToolContext its own arguments, each ``Annotated[type, Arg(...)]``."""
        given = Flags(**flags)
        if problem := given.problem(name):
            raise TypeError(problem)
        if toolset not in TOOLSETS:
            raise TypeError(f"{name}: toolset {toolset!r} is not one of {', '.join(TOOLSETS)}")

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            spec = ToolSpec(**{**vars(given), "destructive": bool(given.destructive),
                               "idempotent": given.idempotent is not False},
                            name=name, title=title, toolset=toolset, doc=" ".join((fn.__doc__ or "").split()),
                            fn=fn)
            own = list(inspect.signature(fn).parameters)[1:]  # after the ToolContext
            if clash := set(own) & SHARED_PARAMS.keys() - ({"wiki"} if not spec.scoped else set()):
                raise TypeError(f"{name}: {', '.join(sorted(clash))} come from the flags of @tool, not from "
                                "the function's parameters")
            spec.description()  # a setting it names that Config lacks fails here, at import
            self.tools[name] = spec
            return fn
        return register


#: The module's tools; ``@tool`` adds to it.
REGISTRY = Registry()


tool = REGISTRY.tool


def signature_params(fn: Callable[..., Any]) -> dict[str, Param]:
    hints = typing.get_type_hints(fn, include_extras=True)
    params = {}
    for name, parameter in list(inspect.signature(fn).parameters.items())[1:]:
        hint = hints[name]
        if typing.get_origin(hint) is typing.Union:  # Python 3.10 adds Optional[] when the default is None
            hint = next((h for h in typing.get_args(hint) if typing.get_origin(h) is Annotated), hint)
        assert typing.get_origin(hint) is Annotated, f"{fn.__name__}.{name} needs Annotated[..., Arg()]"
        base, arg = typing.get_args(hint)[:2]
        kind, item_kind = type_kind(base)
        required = parameter.default is inspect.Parameter.empty
        params[name] = Param(name, kind, item_kind, arg, required, None if required else parameter.default)
    return params


def type_kind(hint: Any) -> tuple[Any, Any]:
    """Reduces a type hint to (kind, item kind): str, int, bool, list or an enum tuple."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, UnionType):
        kinds = [h for h in typing.get_args(hint) if h is not type(None)]
        return (frozenset(kinds), None) if len(kinds) > 1 else type_kind(kinds[0])
    if origin is Literal:
        return tuple(typing.get_args(hint)), None
    if origin is list:
        return list, type_kind(typing.get_args(hint)[0])[0]
    return hint, None


JSON_TYPES = {str: "string", int: "integer", bool: "boolean", list: "array"}


def param_schema(p: Param) -> dict[str, Any]:
    """The JSON schema of one argument, stating only what narrows it (a flag is off unless set)."""
    schema = kind_schema(p.kind)
    # A title's bounds (not empty, at most 255 bytes) are check_text's alone: no model needs them
    # to write a title, and tools/list is paid on every turn.
    if p.kind is list:
        # A list of choices holds each at most once: its cap says nothing the choices do not.
        capped = p.arg.max_items and not (isinstance(p.item_kind, tuple) and p.arg.max_items >= len(p.item_kind))
        schema.update(items=kind_schema(p.item_kind), maxItems=p.arg.max_items if capped else None,
                      minItems=1 if p.required else None)
    # A floor of 0 or 1 (an ID's, an offset's, a count's) is check_int's alone: no model writes below
    # it. A default of false or 0 (an offset's) is where a flag or a reading starts, unless set.
    schema.update(maxLength=p.arg.max_length if p.arg.max_length_listed else None,
                  minimum=p.arg.minimum if (p.arg.minimum or 0) > 1 else None, maximum=p.arg.maximum,
                  default=None if p.default is False or p.default == 0 else p.default,
                  description=p.arg.description)
    return {key: value for key, value in schema.items() if value is not None}


def kind_schema(kind: Any) -> dict[str, Any]:
    if isinstance(kind, tuple):
        return {"type": "string", "enum": list(kind)}
    return {"type": sorted(JSON_TYPES[k] for k in kind) if isinstance(kind, frozenset) else JSON_TYPES[kind]}


def check_arguments(spec: ToolSpec, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A call's arguments as the tool takes them; any problem is an invalid_input naming the argument."""
    accepted = spec.arguments
    unknown = [name for name in arguments if name not in accepted]
    if unknown:
        raise invalid_input(f"Unknown argument{'s' if len(unknown) > 1 else ''} "
                            f"{', '.join(repr(u) for u in unknown)} for {spec.name}. "
                            f"Accepted arguments: {', '.join(accepted)}.")
    values: dict[str, Any] = {}
    for name, p in accepted.items():
        if arguments.get(name) is not None:
            values[name] = check_value(p, arguments[name])
        elif p.required:
            raise invalid_input(f"Missing required argument {name!r} for {spec.name}: {p.arg.description}")
        else:
            values[name] = p.default
    return values


def check_value(p: Param, value: Any) -> Any:
    """``value`` as the tool gets it, once it is what ``p`` takes; else an invalid_input error."""
    name = p.name
    if isinstance(p.kind, frozenset):  # int | str: the value's own type says which it is
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        kind = str if isinstance(value, str) else int if number else None
        if kind not in p.kind:
            kinds = " or ".join(sorted(JSON_TYPES[k] for k in p.kind))
            raise invalid_input(f"Argument {name!r} must be {kinds}, got {json_type(value)}.")
        return check_value(dataclasses.replace(p, kind=kind), value)
    if isinstance(p.kind, tuple):
        if value not in p.kind:
            raise invalid_input(f"Argument {name!r} must be one of {', '.join(p.kind)}; got {quoted(value)}.")
        return value
    if p.kind is bool:
        if not isinstance(value, bool):
            raise invalid_input(f"Argument {name!r} must be true or false, got {json_type(value)}.")
        return value
    return {list: check_list, int: check_int}.get(p.kind, check_text)(p, value)


def check_list(p: Param, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise invalid_input(f"Argument {p.name!r} must be an array, got {json_type(value)}.")
    if not value and p.required:
        raise invalid_input(f"Argument {p.name!r} must not be empty.")
    if p.arg.max_items and len(value) > p.arg.max_items:
        raise invalid_input(f"Argument {p.name!r} takes at most {p.arg.max_items} items, got {len(value)}; "
                            f"split the call.")
    return [check_value(Param(f"{p.name}[{i}]", p.item_kind, None, p.arg, True, None), v)
            for i, v in enumerate(value)]


def check_int(p: Param, value: Any) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid_input(f"Argument {p.name!r} must be an integer, got {json_type(value)}.")
    if p.arg.minimum is not None and value < p.arg.minimum:
        raise invalid_input(f"Argument {p.name!r} must be at least {p.arg.minimum}, got {quoted(value)}.")
    if p.arg.maximum is not None and value > p.arg.maximum:
        raise invalid_input(f"Argument {p.name!r} must be at most {p.arg.maximum}, got {quoted(value)}.")
    return value


def check_text(p: Param, value: Any) -> str:
    if not isinstance(value, str):
        raise invalid_input(f"Argument {p.name!r} must be a string, got {json_type(value)}.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise invalid_input(f"Argument {p.name!r} contains invalid Unicode (an unpaired surrogate)."
                            ) from None
    if p.arg.title:
        value = value.strip()
        check_title_text(p.name, value)
    if p.arg.max_length and len(value) > p.arg.max_length:
        raise invalid_input(f"Argument {p.name!r} is {len(value)} characters long; at most "
                            f"{p.arg.max_length} are accepted.")
    return value


def check_title_text(name: str, title: str) -> None:
    """Refuses what no wiki takes as a page title, saying what to give instead."""
    if not title:
        raise invalid_input(f"Argument {name!r} must be a non-empty page title.")
    # MediaWiki's limit leaves out the namespace prefix; whether a prefix is a namespace is the
    # wiki's to say, and it refuses a title still too long. First, so that no answer quotes more;
    # measured as the wiki would take it, escapes decoded and a fragment apart, as explained below.
    prefix, colon, rest = title.partition(":")
    colon = colon if utf8_len(prefix) <= MAX_TITLE_BYTES else ""  # no namespace is named so long
    taken = urllib.parse.unquote(rest if colon else title).partition("#")
    if max(utf8_len(taken[0]), utf8_len(taken[2])) > MAX_TITLE_BYTES:
        length = utf8_len(rest if colon else title)
        after = " after its namespace prefix" if colon else ""
        raise invalid_input(f"Argument {name!r} is {length} bytes long{after}; a page title has at most "
                            f"{MAX_TITLE_BYTES}.")
    if encoded := PERCENT_ESCAPE.search(title):
        shown = urllib.parse.unquote(title).replace("_", " ")
        raise invalid_input(f"Argument {name!r} is percent-encoded ({encoded.group(0)}); page titles are "
                            f"written as the wiki shows them: {shown!r}.")
    page, fragment, heading = title.partition("#")
    if fragment:
        raise invalid_input(f"Argument {name!r} ends in a fragment (#{heading}), which names a part of a "
                            f"page, not a page. Give the title alone ({page.strip()!r}); to read one "
                            "section, get-page takes section=N.")
    # control characters too: MediaWiki calls them "an invalid UTF-8 sequence", which they are not
    if bad := sorted({repr(c) for c in title if c in "|[]{}<>\x7f" or c < " "}):
        raise invalid_input(f"Argument {name!r} is not a valid page title: it contains {', '.join(bad)}.")


PERCENT_ESCAPE = re.compile("%[0-9A-Fa-f]{2}")


def quoted(value: Any) -> str:
    """``value`` as an error quotes it, in about 100 characters at most: no answer echoes a huge
    argument back (and Python will not write an integer of over 4,300 digits at all)."""
    if isinstance(value, int) and value.bit_length() > 300:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"  # log10(2) digits a bit
    text = repr(value)
    return text if len(text) <= 100 else f"{text[:100]}… ({len(text)} characters)"


def json_type(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "an array", dict: "an object"}.get(type(value), type(value).__name__)
