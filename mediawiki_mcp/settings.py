"""The settings table: one row per environment variable, each with its parser, default and help,
which drives the parser, --help and the README's table."""
from __future__ import annotations

import dataclasses
import functools
import importlib
import ipaddress
import os
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from typing import Any

DEFAULT_WIKI_URL = "https://en.wikipedia.org/w/api.php"


DEFAULT_CONTENT_MAX_BYTES = 50_000


#: get-file-data's cap on the base64-encoded image it returns (as the TypeScript server's).
DEFAULT_FILE_DATA_MAX_BYTES = 1_000_000


#: MCP_TEXT_ORIGIN_MAX_READS's default: a bisection of 30 reads spans a billion revisions.
DEFAULT_TEXT_ORIGIN_MAX_READS = 30


#: The largest file the server holds in memory to upload (MCP_UPLOAD_MAX_BYTES's default).
DEFAULT_UPLOAD_MAX_BYTES = 100_000_000


DEFAULT_HTTP_HOST = "127.0.0.1"


#: MCP_SHUTDOWN_GRACE_SECONDS's default: how long tool calls in flight get to finish after SIGTERM.
SHUTDOWN_GRACE_SECONDS = 5.0


DEFAULT_HTTP_PORT = 3000


#: MCP_SESSIONS_PER_PERSON's default: a person's clients at once, with room for those that crashed.
DEFAULT_SESSIONS_PER_PERSON = 20


#: MCP_HEADER_TIMEOUT_SECONDS's default: ample for a request's head on any link, short for a client that
#: opens connections and sends their heads a byte at a time to hold them (slowloris).
DEFAULT_HEADER_TIMEOUT_SECONDS = 10.0


#: Host names of this machine, which OAuth lets be served over plain http.
LOOPBACK_NAMES = ("127.0.0.1", "::1", "localhost")


#: How HTTP callers prove who they are (MCP_AUTH; its help says how each works).
AUTH_MODES = ("token", "login")


#: With MCP_AUTH=login, how long an access token and a refresh token work by default.
DEFAULT_ACCESS_TOKEN_SECONDS = 3600


DEFAULT_REFRESH_TOKEN_SECONDS = 30 * 24 * 3600


#: The reads (and bases, previews) one client's read ledger keeps at most for the no-loss checks
#: of writes, and how long each is kept after its last change.
READ_LEDGER_MAX_ENTRIES = 2000


#: The bytes of one client's read ledger, at most (MCP_READ_LEDGER_MAX_BYTES).
DEFAULT_READ_LEDGER_MAX_BYTES = 256 * 1024


#: Who confirms a guarded action (MCP_CONFIRM; its help says what each means).
CONFIRM_CHOICES = ("auto", "person", "model")


#: A question to the person that stays unanswered this long is a decline (MCP_CONFIRM_TIMEOUT_SECONDS).
DEFAULT_CONFIRM_TIMEOUT_SECONDS = 300.0


TRUE_WORDS = {"1", "true", "yes", "on"}


FALSE_WORDS = {"0", "false", "no", "off", ""}


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


#: One entry of a host list: host, host:port, [IPv6] or [IPv6]:port, or host:* (any port).
HOST_ENTRY = re.compile(r"(\[[0-9a-f:.]+\]|[^\s/\\@:\[\]*?#,]+)(?::([0-9]{1,5}|\*))?", re.IGNORECASE)


class ConfigError(Exception):
    """Configuration that cannot work; main() prints it and exits non-zero."""


def optional_module(name: str, setting: str, extra: str, needs: str, needed: str) -> Any:
    """The package's optional module ``name``, which ``setting`` asks for; a ConfigError naming what
    to install where the single file runs (it does not carry the optional modules), or where the
    module ``needs`` (``needed``, in words), which the ``extra`` installs, is missing."""
    install = f"pip install 'mediawiki-mcp[{extra}]'"
    if not __package__:
        raise ConfigError(f"{setting} needs the package, which the single file mediawiki_mcp.py does not carry: "
                          f"{install} and run mediawiki-mcp")
    try:
        importlib.import_module(needs)  # asked first: the module below may be imported already
    except ImportError:
        raise ConfigError(f"{setting} needs {needed}, which is not installed: {install}") from None
    return importlib.import_module(f".{name}", __package__)


def setting_parser(convert: Callable[[str], Any], ok: Callable[[str], bool],
                   wanted: str) -> Callable[[str, str], Any]:
    """The parser of a setting's trimmed text: ``convert(text)`` where ``ok(text)``, else a
    ConfigError saying that the variable must be ``wanted``."""
    def parse(name: str, value: str) -> Any:
        if not ok(value.strip()):
            raise ConfigError(f"{name} must be {wanted}, not {value.strip()!r}")
        return convert(value.strip())
    return parse


parse_bool = setting_parser(lambda text: text.lower() in TRUE_WORDS,
                            lambda text: text.lower() in TRUE_WORDS | FALSE_WORDS, "true or false")


byte_count = setting_parser(int, lambda text: whole_number(text) and int(text) >= 1000,
                            "a whole number of bytes, at least 1000")


seconds = setting_parser(int, lambda text: whole_number(text) and int(text) > 0, "a number of seconds")


def nonblank(name: str, value: str) -> str:
    """A value refused when set but empty, as that would silently change which wiki the server
    uses (elsewhere an empty value means the default)."""
    if not value.strip():
        raise ConfigError(f"{name} is set but empty: give it a value, or unset it")
    return value.strip()


def credential(name: str, value: str, header: bool = False) -> str:
    """A credential trimmed of surrounding whitespace, which no bot password or token holds and
    a pasted one often does. Refused when empty (that would silently make the wiki anonymous or
    the HTTP server open) or unsendable; the message names it and never shows it. ``header``:
    it travels in an HTTP header, which carries printable ASCII only, and no space in a token."""
    value = value.strip()
    if not value:
        raise ConfigError(f"{name} is set but empty: give the credential, or leave {name} out")
    if header and not printable_ascii(value, spaces=False):
        raise ConfigError(f"{name} must be printable ASCII without spaces, as it travels in an HTTP header; "
                          "check it (it is not shown)")
    if not value.isprintable():
        raise ConfigError(f"{name} holds a control character, such as a line break; check it "
                          "(it is not shown)")
    return value


def printable_ascii(text: str, spaces: bool = True) -> bool:
    return all(" " < c <= "~" or spaces and c == " " for c in text)


def whole_number(text: str) -> bool:
    return re.fullmatch(r"[0-9]+", text) is not None


def valid_host(host: str) -> bool:
    """Whether a host name or IP address can name a server: no spaces, no empty labels."""
    if not host or any(c.isspace() or not c.isprintable() or c in '<>"{}|\\^`' for c in host):
        return False
    try:
        host.encode("idna")
    except UnicodeError:
        return False
    return True


def comma_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def host_list(name: str, value: str, header: bool = False) -> list[str]:
    """A comma-separated list of ``host`` or ``host:port`` entries. ``header``: Host header
    values, where ``host:*`` means any port (and IPv6 comes in brackets). A URL or a wildcard
    would never match anything, so it is refused rather than kept."""
    entries = comma_list(value)
    for entry in entries:
        if not host_entry(entry, header):
            raise ConfigError(f"{name} takes hosts such as wiki.internal or wiki.internal:8080"
                              + (" (localhost:* for any port)" if header else "")
                              + f", separated by commas, not {entry!r}")
    return entries


def host_entry(entry: str, header: bool) -> bool:
    """Whether ``entry`` is a host, optionally with a port (see host_list)."""
    match = HOST_ENTRY.fullmatch(entry)
    if not match:
        try:
            ipaddress.ip_address(entry)
        except ValueError:
            return False
        return not header  # a bare IPv6 address: the address guard matches it, a Host header never holds it
    port = match.group(2)
    return port is None or (header if port == "*" else 0 < int(port) < 65536)


def origin_list(name: str, value: str) -> list[str]:
    origins = comma_list(value)
    for origin in origins:
        scheme, _, rest = origin.partition("://")
        if scheme.lower() not in ("http", "https") or not host_entry(rest, header=True):
            raise ConfigError(f"{name} takes origins such as https://app.example.org "
                              f"(scheme and host, no path), not {origin!r}")
    return origins


def public_origin(name: str, value: str) -> str:
    """The origin clients reach this server at (MCP_PUBLIC_URL): https, or http on a loopback host,
    as OAuth requires of an issuer; no path, since the sign-in's routes sit at the root."""
    parts = urllib.parse.urlsplit(value.strip())
    if (parts.scheme not in ("https", "http") or not parts.hostname
            or parts.scheme == "http" and parts.hostname not in LOOPBACK_NAMES
            or parts.path not in ("", "/") or parts.query or parts.fragment or parts.username):
        raise ConfigError(f"{name} takes an origin such as https://mcp.example.org (https, or http on "
                          f"127.0.0.1 or localhost; no path), not {value.strip()!r}")
    return f"{parts.scheme}://{parts.netloc.lower()}"


def secret_list(name: str, value: str) -> tuple[str, ...]:
    """Comma-separated secrets (MCP_AUTH_SECRET's keys), never quoted in a message."""
    keys = tuple(comma_list(value))
    if not keys:
        raise ConfigError(f"{name} is set but empty: give a key, or leave {name} out")
    return keys


def state_address(name: str, value: str) -> str:
    """A Valkey or Redis address (MCP_STATE_URL), checked without ever quoting it: it may
    hold a password."""
    value = value.strip()
    try:
        parts = urllib.parse.urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        parts = None
    if parts is None or parts.scheme.lower() not in ("redis", "rediss") or not parts.hostname:
        raise ConfigError(f"{name} takes a redis:// or rediss:// address such as redis://cache.internal:6379/0 "
                          f"(the value given is not shown: it may hold a password)")
    # The Redis client would take /abc as database 0 and crash at start on a malformed option.
    if parts.path.strip("/") and not parts.path.strip("/").isdigit():
        raise ConfigError(f"{name}: the database, the path after the host, must be a number such as /0 "
                          "(the value given is not shown: it may hold a password)")
    for option, text in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        try:
            STATE_OPTION_TYPES.get(option, str)(text)
        except ValueError:
            raise ConfigError(f"{name}: the option {option!r} of the address must be a "
                              f"{'whole ' if STATE_OPTION_TYPES[option] is int else ''}number "
                              "(the value given is not shown: it may hold a password)") from None
    return value


#: The options of a store address that the Redis client reads as numbers.
STATE_OPTION_TYPES: dict[str, type[int | float]] = {
    "db": int, "socket_timeout": float, "socket_connect_timeout": float, "socket_read_size": int,
    "max_connections": int, "health_check_interval": int, "timeout": float, "protocol": int}


def shown_address(url: str) -> str:
    """A store's address as logs, errors and /health show it: without password or query. A name
    alone before the @ (redis://secret@host) is shown neither: it is often the password."""
    parts = urllib.parse.urlsplit(url)
    user = f"{parts.username}@" if parts.username and parts.password is not None else ""
    host = f"[{parts.hostname}]" if ":" in (parts.hostname or "") else parts.hostname
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{user}{host}{port}{parts.path}"


def upload_directories(entries: Iterable[str], source: str) -> tuple[str, ...]:
    """Directories uploads may read from: absolute, existing, symlinks resolved."""
    found = []
    for entry in (e.strip() for e in entries):
        if not entry:
            continue
        if not os.path.isabs(entry):
            raise ConfigError(f"{source}: upload directory {entry!r} must be an absolute path")
        if not os.path.exists(entry):
            raise ConfigError(f"{source}: upload directory {entry!r} does not exist")
        if not os.path.isdir(entry):
            raise ConfigError(f"{source}: upload directory {entry!r} is not a directory")
        found.append(os.path.realpath(entry))
    return tuple(found)


#: The groups of tools an operator may offer (MCP_TOOLSETS); each tool names its own (@tool).
TOOLSETS = {
    "pages": "read and search pages, categories, links, templates; site info and the account",
    "edit": "create, change, move and copy pages (from another wiki); categories; a replace across pages",
    "history": "revisions, page history, diffs and undo",
    "talk": "start and answer talk page discussions",
    "changes": "recent changes, user contributions, logs, watchlist",
    "files": "read, upload and update files",
    "admin": "delete, undelete, protect and roll back (rights most accounts lack)",
    "wikis": "add and remove wikis",
}


DEFAULT_TOOLSETS = frozenset({"pages", "edit", "history"})


#: What a session may load with load-toolset unless the operator says otherwise: all but the
#: toolsets of rights most accounts lack and of the server's own wikis.
DEFAULT_LOADABLE_TOOLSETS = frozenset(TOOLSETS) - {"admin", "wikis"}


def toolset_names(name: str, value: str) -> frozenset[str]:
    """Comma-separated toolsets, where ``all`` names every one and ``default`` the default ones."""
    entries = [e.lower() for e in comma_list(value)]
    unknown = [f" {e!r}" for e in entries if e not in (*TOOLSETS, "all", "default")]
    if unknown or not entries:
        raise ConfigError(f"{name} names no toolset{''.join(unknown[:1])}; the toolsets are "
                          f"{', '.join(TOOLSETS)}, all and default")
    return frozenset(toolset for entry in entries for toolset in
                     (TOOLSETS if entry == "all" else DEFAULT_TOOLSETS if entry == "default" else (entry,)))


def loadable_toolsets(name: str, value: str) -> frozenset[str]:
    """Toolsets as toolset_names reads them, where an empty value names none."""
    return toolset_names(name, value) if value.strip() else frozenset()


@dataclasses.dataclass(frozen=True)
class Setting:
    """One setting: its environment variable, its help (--help, docs/configuration.md, installers), its value
    when unset, how its text is read and checked (``parse(variable, text)``, a ConfigError naming
    the variable), the configuration file's field that says the same, whether it is a secret,
    whether an empty value means the default (else parse refuses it) and ``also``, older names read
    first, their values (lists) joined."""
    variable: str
    help: str
    default: Any = None
    parse: Callable[[str, str], Any] = nonblank
    field: str = ""
    secret: bool = False
    empty_is_default: bool = True
    also: tuple[str, ...] = ()

    def read(self, env: Mapping[str, str]) -> Any:
        given = [self.parse(name, env[name]) for name in self.names_given(env)]
        if not given:
            return self.default
        return tuple(item for value in given for item in value) if self.also else given[-1]

    def names_given(self, env: Mapping[str, str]) -> list[str]:
        """The names of this setting that ``env`` gives a value (not an empty one meaning the default)."""
        return [name for name in (*self.also, self.variable)
                if name in env and (env[name].strip() or not self.empty_is_default)]

    @property
    def described(self) -> str:
        return self.help + "".join(f" (also {name})" for name in self.also)


SETTINGS = {row.variable: row for row in (
    Setting("MEDIAWIKI_URL", "any URL of the wiki: its api.php, a page or its origin; user:password@ in it goes as "
            f"HTTP basic auth, to that origin only (default {DEFAULT_WIKI_URL})", DEFAULT_WIKI_URL,
            field="wikis.*.server", empty_is_default=False),
    Setting("MEDIAWIKI_USERNAME", "bot password user name, such as Name@BotName (Special:BotPasswords)",
            parse=credential, field="wikis.*.username", secret=True, empty_is_default=False),
    Setting("MEDIAWIKI_PASSWORD", "bot password; surrounding spaces are trimmed", parse=credential,
            field="wikis.*.password", secret=True, empty_is_default=False),
    Setting("MEDIAWIKI_TOKEN", "OAuth 2 owner-only access token, sent as a Bearer token instead of a bot password",
            parse=functools.partial(credential, header=True), field="wikis.*.token", secret=True,
            empty_is_default=False),
    Setting("MEDIAWIKI_READ_ONLY", "when true, no write tools are offered and writes to the wiki are refused; "
            "default: true without credentials", parse=parse_bool, field="wikis.*.readOnly"),
    Setting("MEDIAWIKI_USER_AGENT", "your part of the User-Agent, such as 'MyBot/1.0 (me@example.org)': Wikimedia "
            "throttles clients without contact details", "",
            setting_parser(str, printable_ascii, "printable ASCII, as it travels in an HTTP header")),
    Setting("CONFIG", "JSON file naming several wikis (as --config); MEDIAWIKI_URL, the credentials and "
            "MEDIAWIKI_READ_ONLY are then ignored", empty_is_default=False),
    Setting("MCP_TRUSTED_HOSTS", "comma-separated hosts (host or host:port) that add-wiki and URL uploads may "
            "reach on private addresses", (), lambda name, value: tuple(h.lower() for h in host_list(name, value))),
    Setting("MCP_UPLOAD_DIRS", "directories uploads may read from, separated by ':' (';' on Windows); none: "
            "uploads from disk are off", (), lambda name, value: upload_directories(value.split(os.pathsep), name),
            field="uploadDirs", also=("MEDIAWIKI_UPLOAD_DIRS",)),
    Setting("MCP_UPLOAD_MAX_BYTES", f"largest file the server uploads itself (default {DEFAULT_UPLOAD_MAX_BYTES}); "
            "a larger URL upload is fetched by the wiki", DEFAULT_UPLOAD_MAX_BYTES, byte_count),
    Setting("MCP_CONTENT_MAX_BYTES", f"byte budget of content per response (default {DEFAULT_CONTENT_MAX_BYTES})",
            DEFAULT_CONTENT_MAX_BYTES, byte_count),
    Setting("MCP_FILE_DATA_MAX_BYTES", "largest image get-file-data returns, in bytes of base64 "
            f"(default {DEFAULT_FILE_DATA_MAX_BYTES})", DEFAULT_FILE_DATA_MAX_BYTES, byte_count),
    Setting("MCP_CONFIRM", "who confirms a guarded action (delete, protect, rollback, a replace across pages, "
            "an undo of other people's edits, a move with subpages, an undelete of many revisions, a page "
            "emptied or shrunk by update-page's removeSections or blank): auto (default: the person, asked "
            "through the client where it can ask, else the model: confirm=true, dryRun=false), person (refused "
            "where the client cannot ask) or model (never asks the person)", "auto",
            setting_parser(str.lower, lambda text: text.lower() in CONFIRM_CHOICES,
                           " or ".join(CONFIRM_CHOICES))),
    Setting("MCP_CONFIRM_TIMEOUT_SECONDS", "seconds the person has to answer a confirmation question "
            f"(default {DEFAULT_CONFIRM_TIMEOUT_SECONDS:g}); no answer is a decline",
            DEFAULT_CONFIRM_TIMEOUT_SECONDS, setting_parser(
                float, lambda text: re.fullmatch(r"[0-9]+(\.[0-9]+)?", text) is not None
                and 0 < float(text) <= 86400, "a number of seconds above 0, up to 86400")),
    Setting("MCP_TEXT_ORIGIN_MAX_READS", "most revisions find-text-origin reads the text of in one call "
            f"(default {DEFAULT_TEXT_ORIGIN_MAX_READS}, at least 2); it then names the call that goes on",
            DEFAULT_TEXT_ORIGIN_MAX_READS,
            setting_parser(int, lambda text: whole_number(text) and int(text) >= 2, "a whole number, at least 2")),
    Setting("MEDIAWIKI_MCP_LOG_LEVEL", f"log level on stderr: {', '.join(LOG_LEVELS)} (default INFO)", "INFO",
            setting_parser(str.upper, lambda text: text.upper() in LOG_LEVELS, f"one of {', '.join(LOG_LEVELS)}")),
    Setting("MCP_TRANSPORT", "the transport: stdio (default) or http (Streamable HTTP at /mcp); or --transport",
            "stdio", setting_parser(str.lower, lambda text: text.lower() in ("stdio", "http"), "stdio or http")),
    Setting("MCP_BIND", f"HTTP: address to listen on (default {DEFAULT_HTTP_HOST}); or --host", DEFAULT_HTTP_HOST),
    Setting("PORT", f"HTTP: port (default {DEFAULT_HTTP_PORT}; 0 picks a free one); or --port", DEFAULT_HTTP_PORT,
            setting_parser(int, whole_number, "a port number")),
    Setting("MCP_ALLOWED_HOSTS", "HTTP: Host headers accepted, comma-separated, name:* for any port (default: the "
            "loopback names when listening on loopback, else unchecked)", [],
            functools.partial(host_list, header=True)),
    Setting("MCP_ALLOWED_ORIGINS", "HTTP: Origin headers accepted, comma-separated, such as "
            "https://app.example.org (default: the loopback names when listening on loopback)", [], origin_list),
    Setting("MCP_AUTH_TOKEN", "HTTP: token every request to /mcp must send as 'Authorization: Bearer'",
            parse=functools.partial(credential, header=True), secret=True, empty_is_default=False),
    Setting("MCP_AUTH_TOKENS", "HTTP: JSON file giving each person a token of their own and their wiki "
            "accounts, so that each edits as themselves (docs/people.md)", empty_is_default=False),
    Setting("MCP_AUTH", "HTTP: how callers prove who they are: token (MCP_AUTH_TOKEN, MCP_AUTH_TOKENS; the "
            "default when either is set) or login (each person signs in with a bot password of their own; "
            "docs/sign-in.md)",
            parse=setting_parser(str.lower, lambda text: text.lower() in AUTH_MODES, " or ".join(AUTH_MODES))),
    Setting("MCP_METRICS_TOKEN", "HTTP: token a scraper of /metrics sends as 'Authorization: Bearer' (default: "
            "none, and /metrics answers this machine's own addresses only); needs pip install "
            "'mediawiki-mcp[metrics]'", parse=functools.partial(credential, header=True), secret=True,
            empty_is_default=False),
    Setting("MCP_PUBLIC_URL", "HTTP with MCP_AUTH=login: the origin clients reach this server at, such as "
            "https://mcp.example.org behind a TLS proxy (default: the address it listens on)",
            parse=public_origin),
    Setting("MCP_AUTH_SECRET", "HTTP with MCP_AUTH=login: comma-separated Fernet keys that encrypt the bot "
            "passwords people sign in with; the first encrypts, all decrypt (to rotate, put a new key first)",
            parse=secret_list, secret=True, empty_is_default=False),
    Setting("MCP_ACCESS_TOKEN_SECONDS", "HTTP with MCP_AUTH=login: how long an access token works (default "
            f"{DEFAULT_ACCESS_TOKEN_SECONDS})", DEFAULT_ACCESS_TOKEN_SECONDS, seconds),
    Setting("MCP_REFRESH_TOKEN_SECONDS", "HTTP with MCP_AUTH=login: how long a refresh token works, at least "
            f"MCP_ACCESS_TOKEN_SECONDS (default {DEFAULT_REFRESH_TOKEN_SECONDS}, 30 days)",
            DEFAULT_REFRESH_TOKEN_SECONDS, seconds),
    Setting("MCP_TOOLSETS", f"comma-separated groups of tools to offer: {', '.join(TOOLSETS)}; all; default "
            f"(the default: {', '.join(t for t in TOOLSETS if t in DEFAULT_TOOLSETS)})", DEFAULT_TOOLSETS,
            toolset_names, field="toolsets"),
    Setting("MCP_LOADABLE_TOOLSETS", "comma-separated toolsets a client may load for its session with "
            f"load-toolset (default: {', '.join(t for t in TOOLSETS if t in DEFAULT_LOADABLE_TOOLSETS)}); "
            "empty: none, and load-toolset is not offered", DEFAULT_LOADABLE_TOOLSETS, loadable_toolsets,
            field="loadableToolsets", empty_is_default=False),
    Setting("MCP_READ_LEDGER_MAX_BYTES", "bytes of what each client read that the server keeps for the no-loss "
            f"checks of writes (default {DEFAULT_READ_LEDGER_MAX_BYTES}, and at most {READ_LEDGER_MAX_ENTRIES} "
            "pages and sections); past it the oldest is dropped, and such a page must be read again before "
            "it is written whole", DEFAULT_READ_LEDGER_MAX_BYTES, byte_count),
    Setting("MCP_STATELESS", "HTTP: true keeps no state between requests, for replicas; or --stateless", False,
            parse_bool),
    Setting("MCP_SHUTDOWN_GRACE_SECONDS", "HTTP: seconds the tool calls in flight get to finish after SIGTERM "
            f"(default {SHUTDOWN_GRACE_SECONDS:g}); those still running are then answered with what is known",
            SHUTDOWN_GRACE_SECONDS, setting_parser(
                float, lambda text: re.fullmatch(r"[0-9]+(\.[0-9]+)?", text) is not None and float(text) <= 3600,
                "a number of seconds up to 3600")),
    Setting("MCP_SESSIONS_PER_PERSON", "HTTP: MCP sessions one person (MCP_AUTH_TOKENS, MCP_AUTH=login) may have "
            f"open at once (default {DEFAULT_SESSIONS_PER_PERSON}); one more closes their oldest idle session, or "
            "is refused (429) while every one is busy", DEFAULT_SESSIONS_PER_PERSON,
            setting_parser(int, lambda text: whole_number(text) and int(text) >= 1, "a whole number, at least 1")),
    Setting("MCP_HEADER_TIMEOUT_SECONDS", "HTTP: seconds a client has to send a request's line and headers "
            f"(default {DEFAULT_HEADER_TIMEOUT_SECONDS:g}); a connection still sending them then is closed",
            DEFAULT_HEADER_TIMEOUT_SECONDS, setting_parser(
                float, lambda text: re.fullmatch(r"[0-9]+(\.[0-9]+)?", text) is not None and 0 < float(text) <= 3600,
                "a number of seconds above 0, up to 3600")),
    Setting("MCP_STATE_URL", "redis:// or rediss:// address of a Valkey or Redis server through which replicas "
            "share idempotency keys and the record of reads (needs pip install 'mediawiki-mcp[redis]'); "
            "default: kept in each process's memory", parse=state_address, field="stateUrl", secret=True),
)}


def setting(env: Mapping[str, str], variable: str) -> Any:
    """The value of a setting (SETTINGS) in ``env``."""
    return SETTINGS[variable].read(env)
