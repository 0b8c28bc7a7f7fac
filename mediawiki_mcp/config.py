"""Config and WikiConfig: the settings read from the environment, or from the TypeScript MediaWiki
MCP server's config.json, into the wikis this server serves."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import signal
import subprocess
import urllib.parse
from collections.abc import Callable, Mapping
from types import MappingProxyType  # not `import types`: tools take an argument named types
from typing import Any

from .client import Credentials, MediaWikiClient
from .settings import (
    SETTINGS,
    ConfigError,
    credential,
    loadable_toolsets,
    setting,
    state_address,
    toolset_names,
    upload_directories,
    valid_host,
)
from .wire import DEFAULT_PORTS, _warn_once, log, split_userinfo


@dataclasses.dataclass(frozen=True)
class WikiConfig:
    """One configured wiki. Credentials are never shown by repr()."""
    key: str
    url: str
    username: str | None = None
    password: str | None = dataclasses.field(default=None, repr=False)
    token: str | None = dataclasses.field(default=None, repr=False)
    read_only: bool = True
    private: bool = False                 # its content must not leave through public means
    tags: tuple[str, ...] = ()            # change tags sent on every write
    attribute_edits: bool = True          # edit summaries end with " (via mediawiki-mcp)"
    sitename: str = ""                    # the configured name, until site info says
    basic_auth: tuple[str, str] | None = dataclasses.field(default=None, repr=False)

    def __post_init__(self) -> None:
        # A user name and password in the address go as HTTP basic auth: the address itself
        # is shown (list-wikis, resources), so it never keeps them.
        url, userinfo = split_userinfo(self.url)
        object.__setattr__(self, "url", url)
        object.__setattr__(self, "basic_auth", self.basic_auth or userinfo)

    def client(self, user_agent_prefix: str = "", **options: Any) -> MediaWikiClient:
        credentials = Credentials(self.username, self.password, self.token, self.basic_auth)
        return MediaWikiClient(self.url, credentials, user_agent_prefix=user_agent_prefix, **options)


def from_setting(variable: str) -> Any:
    """A Config field that a setting fills (Config.from_env), its default the setting's."""
    return dataclasses.field(default=SETTINGS[variable].default, metadata={"setting": variable})


@dataclasses.dataclass(frozen=True)
class Config:
    """The configuration, as read at start; the wikis added and removed since belong to the
    server's state (ServerState.wikis), and how it is served to the transport (HttpOptions)."""
    wikis: Mapping[str, WikiConfig]
    default_wiki: str
    content_max_bytes: int = from_setting("MCP_CONTENT_MAX_BYTES")
    file_data_max_bytes: int = from_setting("MCP_FILE_DATA_MAX_BYTES")
    confirm: str = from_setting("MCP_CONFIRM")
    confirm_timeout_seconds: float = from_setting("MCP_CONFIRM_TIMEOUT_SECONDS")
    text_origin_max_reads: int = from_setting("MCP_TEXT_ORIGIN_MAX_READS")
    user_agent: str = from_setting("MEDIAWIKI_USER_AGENT")
    upload_max_bytes: int = from_setting("MCP_UPLOAD_MAX_BYTES")
    upload_dirs: tuple[str, ...] = from_setting("MCP_UPLOAD_DIRS")
    trusted_hosts: tuple[str, ...] = from_setting("MCP_TRUSTED_HOSTS")
    toolsets: frozenset[str] = from_setting("MCP_TOOLSETS")
    loadable_toolsets: frozenset[str] = from_setting("MCP_LOADABLE_TOOLSETS")
    read_ledger_max_bytes: int = from_setting("MCP_READ_LEDGER_MAX_BYTES")
    state_url: str | None = dataclasses.field(default=None, repr=False, metadata={"setting": "MCP_STATE_URL"})
    allow_wiki_management: bool = True
    toolsets_from: str = ""  # where the toolsets were chosen (--check says): '' is by default

    def __post_init__(self) -> None:
        object.__setattr__(self, "wikis", MappingProxyType(dict(self.wikis)))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, config_path: str | None = None) -> Config:
        """The configuration from the environment, or from the JSON file that ``config_path``
        (``--config``) or ``CONFIG`` names, with the environment's shared settings."""
        env = os.environ if environ is None else environ
        shared = {field.name: setting(env, field.metadata["setting"]) for field in dataclasses.fields(cls)
                  if "setting" in field.metadata}
        shared["toolsets_from"] = "MCP_TOOLSETS" if SETTINGS["MCP_TOOLSETS"].names_given(env) else ""
        path = config_path or setting(env, "CONFIG")
        if path:
            return config_from_file(path, env, shared)
        username, password, token = (setting(env, name) for name in
                                     ("MEDIAWIKI_USERNAME", "MEDIAWIKI_PASSWORD", "MEDIAWIKI_TOKEN"))
        url = wiki_address(setting(env, "MEDIAWIKI_URL"), "MEDIAWIKI_URL", "MEDIAWIKI_TOKEN" if token else "")
        if bool(username) != bool(password):
            raise ConfigError("MEDIAWIKI_USERNAME and MEDIAWIKI_PASSWORD go together: set both or neither")
        if username and token:
            raise ConfigError("Set either MEDIAWIKI_USERNAME/MEDIAWIKI_PASSWORD or MEDIAWIKI_TOKEN, not both")
        read_only = setting(env, "MEDIAWIKI_READ_ONLY")
        wiki = WikiConfig(key=wiki_key(url), url=url, username=username, password=password, token=token,
                          read_only=not (username or token) if read_only is None else read_only)
        return cls(wikis={wiki.key: wiki}, default_wiki=wiki.key, **shared)


def wiki_key(url: str) -> str:
    """A wiki's key is its server name (with the port when it is not the scheme's own)."""
    parts = urllib.parse.urlsplit(url)
    default = DEFAULT_PORTS.get(parts.scheme.lower())
    return (parts.hostname or "") + (f":{parts.port}" if parts.port and parts.port != default else "")


def normalise_server(url: str) -> str:
    """An http(s) URL from what people write for a wiki's address: ``//host`` (a
    protocol-relative $wgServer) and a bare ``host`` become https; ValueError otherwise."""
    url = url.strip()
    if url.startswith("//"):
        url = "https:" + url
    elif "://" not in url:
        url = "https://" + url
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not valid_host(parts.hostname or ""):
        raise ValueError(url)
    parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    return urllib.parse.urlunsplit((parts.scheme.lower(), parts.netloc, parts.path, parts.query, ""))


def wiki_address(value: str, name: str, token: str = "") -> str:
    """A configured wiki address, normalised. A user name and password in it (for HTTP basic
    auth) must come together, and not beside a token (``token``: where one is set), as both
    travel in the Authorization header. Messages never show an address that has them."""
    try:
        url = normalise_server(value)
    except ValueError:
        shown = "(not shown: it holds a user name or password)" if "@" in value else repr(value)
        raise ConfigError(f"{name} must be an http(s) URL of the wiki, not {shown}") from None
    basic_auth = split_userinfo(url)[1]
    if basic_auth and not all(basic_auth):
        lacking = "user name but no password" if basic_auth[0] else "password but no user name"
        raise ConfigError(f"{name} holds a {lacking} before its @; HTTP basic auth needs both")
    if basic_auth and token:
        raise ConfigError(f"{name} holds a user name and password for HTTP basic auth, which cannot go "
                          f"beside a token ({token}): both travel in the Authorization header")
    return url


#: Per-wiki fields of that format and the JSON types each takes (credentials apart).
WIKI_FIELD_TYPES: dict[str, tuple[str, ...]] = {
    "sitename": ("string",), "server": ("string",), "articlepath": ("string",),
    "scriptpath": ("string",), "readOnly": ("boolean",), "private": ("boolean",),
    "attributeEdits": ("boolean",), "tags": ("string", "array of strings", "null"),
    "publicServer": ("string", "null"), "oauth2ClientId": ("string", "null"),
    "oauth2ClientSecret": ("string", "null"), "oauth2CallbackPort": ("number", "null"),
}


#: The credential fields: those of the secret settings (SETTINGS).
SECRET_FIELDS = tuple(row.field.removeprefix("wikis.*.") for row in SETTINGS.values()
                      if row.secret and row.field.startswith("wikis.*."))


#: Accepted and ignored: browser OAuth is a feature of the TypeScript server only, and links
#: are built from the public address the wiki itself reports.
IGNORED_WIKI_FIELDS = ("oauth2ClientId", "oauth2ClientSecret", "oauth2CallbackPort", "publicServer")


TOP_FIELD_TYPES: dict[str, tuple[str, ...]] = {
    "defaultWiki": ("string",), "wikis": ("object",), "allowWikiManagement": ("boolean",),
    "uploadDirs": ("array of strings",), "toolsets": ("array of strings", "string"), "stateUrl": ("string",),
    "loadableToolsets": ("array of strings", "string"),
}


EXEC_SECRET_TIMEOUT_SECONDS = 30


VARIABLE = re.compile(r"\$\{([^}]+)\}")


def json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array of strings" if all(isinstance(v, str) for v in value) else "array"
    kinds = ((type(None), "null"), (bool, "boolean"), ((int, float), "number"), (str, "string"),
             (dict, "object"))
    return next((kind for types, kind in kinds if isinstance(value, types)), type(value).__name__)


def check_type(path: str, value: Any, kinds: tuple[str, ...]) -> None:
    kind = json_kind(value)
    if kind not in kinds and not (kind == "array of strings" and "array" in kinds):
        quoted = " (remove the quotes)" if kind == "string" and kinds[0] in ("boolean", "number") else ""
        raise ConfigError(f"{path} must be {' or '.join(kinds)}, not {kind}{quoted}")


def substitute(value: str, env: Mapping[str, str], path: str, required: bool,
               encode: Callable[[str], str] = str) -> str:
    """Replaces ``${VAR}`` with the environment's value (through ``encode``). An unset variable
    is an error where ``required`` (credentials); elsewhere the text stays, as the TypeScript
    server does."""
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in env:
            return encode(env[name])
        if required:
            raise ConfigError(f"{path} refers to ${{{name}}}, which is not set in the environment")
        return match.group(0)
    return VARIABLE.sub(replace, value)


def substitute_address(value: str, env: Mapping[str, str], path: str) -> str:
    """``${VAR}`` in a wiki address. In the user name and password before its @ a variable is a
    credential: it must be set, and it is percent-encoded, since a password may hold any character."""
    scheme = re.match(r"([a-z][a-z0-9+.-]*:)?//", value, re.IGNORECASE)
    start = scheme.end() if scheme else 0
    userinfo, at, _ = re.split(r"[/?#]", value[start:], maxsplit=1)[0].rpartition("@")
    if not at:
        return substitute(value, env, path, False)
    end = start + len(userinfo)
    return (value[:start] + substitute(userinfo, env, path, True, lambda v: urllib.parse.quote(v, safe=""))
            + substitute(value[end:], env, path, False))


def file_credential(value: Any, env: Mapping[str, str], path: str, header: bool, secret: bool = True) -> str | None:
    """A credential field of the configuration file: null, a string (``${VAR}`` substituted,
    the variable required) or an exec source. A literal empty string is no credential, as null
    is and as the TypeScript server reads it; one that a variable leaves empty is refused.
    Written out, a ``secret`` gets a warning at start; a user name (not ``secret``) none."""
    if value is None or isinstance(value, str) and not value.strip():
        return None
    if isinstance(value, str):
        if secret and not VARIABLE.search(value):
            _warn_once(f"{path} holds a plaintext credential; ${{VAR}} or an exec source keeps it out "
                       "of the file.")
        value = substitute(value, env, path, True)
    else:
        value = run_secret_command(value, path)
    return credential(path, value, header)


def run_secret_command(spec: Any, path: str, timeout: float = EXEC_SECRET_TIMEOUT_SECONDS) -> str:
    """A secret from ``{"exec": {"command": ..., "args": [...]}}``: the command's trimmed
    standard output. Run without a shell; its output is never shown, not even on failure. One that
    takes longer than ``timeout`` seconds is killed with every process it started."""
    command = spec.get("exec") if isinstance(spec, dict) else None
    if not isinstance(command, dict):
        raise ConfigError(f"{path} must be a string, null or {{\"exec\": {{\"command\": ..., \"args\": [...]}}}}")
    program, args = command.get("command"), command.get("args", [])
    if not isinstance(program, str) or not program:
        raise ConfigError(f"{path}.exec.command must be a non-empty string")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{path}.exec.args must be an array of strings")
    try:  # its error output goes nowhere: it may hold the secret too
        # A session of its own: on a timeout its whole process group goes, so no helper it
        # started (a password manager's agent, say) lives on holding the output pipe open.
        process = subprocess.Popen([program, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   text=True, stdin=subprocess.DEVNULL, start_new_session=True)
    except FileNotFoundError:
        raise ConfigError(f"{path}: the secret command {program!r} was not found") from None
    except OSError as error:
        raise ConfigError(f"{path}: the secret command {program!r} could not run ({error.strerror})") from None
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise ConfigError(f"{path}: the secret command {program!r} did not finish within {timeout:g} s, "
                          "so it was stopped") from None
    if process.returncode != 0:
        ended = (f"was stopped by signal {-process.returncode}" if process.returncode < 0
                 else f"failed with exit status {process.returncode}")
        raise ConfigError(f"{path}: the secret command {program!r} {ended}; its output is not shown (it may "
                          "hold the secret): run the command yourself to see why.")
    secret = output.strip()
    if not secret:
        raise ConfigError(f"{path}: the secret command {program!r} printed nothing")
    return secret


def json_object(path: str) -> dict[str, Any]:
    """The JSON object a configuration file holds."""
    try:
        with open(path, encoding="utf-8") as file:
            raw = json.load(file)
    except FileNotFoundError:
        raise ConfigError(f"configuration file {path} does not exist") from None
    except OSError as error:
        raise ConfigError(f"configuration file {path} cannot be read: {error.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"configuration file {path} is not valid JSON: {error}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"configuration file {path} must hold a JSON object, not {json_kind(raw)}")
    return raw


def config_from_file(path: str, env: Mapping[str, str], settings: dict[str, Any]) -> Config:
    """Reads the configuration file (the TypeScript server's config.json shape). Every
    problem is a ConfigError naming the field."""
    raw = json_object(path)
    for name, kinds in TOP_FIELD_TYPES.items():
        if name in raw:
            check_type(name, raw[name], kinds)
    unknown = [name for name in raw if name not in TOP_FIELD_TYPES]
    if unknown:
        log.warning("configuration file %s: unknown field(s) %s ignored", path, ", ".join(unknown))
    for row in SETTINGS.values():
        if row.field.startswith("wikis.") and env.get(row.variable, "").strip():
            log.warning("%s is ignored: the configuration file %s names the wikis", row.variable, path)
    wikis: dict[str, WikiConfig] = {}
    ignored: set[str] = set()
    for key, entry in (raw.get("wikis") or {}).items():
        wikis[key] = wiki_from_file(key, entry, env, ignored)
    if not wikis:
        raise ConfigError("wikis must name at least one wiki, such as "
                          "{\"en.wikipedia.org\": {\"server\": \"https://en.wikipedia.org\"}}")
    if ignored:
        log.warning("configuration file %s: %s ignored (browser OAuth is not a feature of this server; "
                    "use token or username and password)", path, ", ".join(sorted(ignored)))
    default = substitute(raw.get("defaultWiki") or next(iter(wikis)), env, "defaultWiki", False)
    if default not in wikis:
        raise ConfigError(f"defaultWiki {default!r} is not one of the wikis: {', '.join(wikis)}")
    upload_dirs = upload_directories(
        [substitute(d, env, "uploadDirs", False) for d in raw.get("uploadDirs") or []], "uploadDirs")
    settings = {**settings, "upload_dirs": tuple(dict.fromkeys(settings["upload_dirs"] + upload_dirs))}
    if "toolsets" in raw:  # the file's choice over the environment's, as for the wikis
        toolsets = raw["toolsets"]
        settings["toolsets"] = toolset_names("toolsets", toolsets if isinstance(toolsets, str) else ",".join(toolsets))
        settings["toolsets_from"] = f"toolsets in {path}"
    if "loadableToolsets" in raw:
        loadable = raw["loadableToolsets"]
        settings["loadable_toolsets"] = loadable_toolsets(
            "loadableToolsets", loadable if isinstance(loadable, str) else ",".join(loadable))
    if raw.get("stateUrl"):  # the file's choice over the environment's too
        settings["state_url"] = state_address("stateUrl", substitute_address(raw["stateUrl"], env, "stateUrl"))
    return Config(wikis=wikis, default_wiki=default,
                  allow_wiki_management=raw.get("allowWikiManagement", True), **settings)


def wiki_from_file(key: str, entry: Any, env: Mapping[str, str], ignored: set[str]) -> WikiConfig:
    where = f"wikis.{key}"
    if not key.strip() or key.startswith("mcp://") or any(c.isspace() or c == "/" for c in key):
        raise ConfigError(f"wiki key {key!r} must be a name such as en.wikipedia.org "
                          "(no spaces, no /, not starting with mcp://)")
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be an object, not {json_kind(entry)}")
    fields = {name: wiki_field(where, name, value, env, ignored) for name, value in entry.items()}
    if not fields.get("server"):
        raise ConfigError(f"{where}.server is required: the wiki's address, such as https://{key}")
    username, password, token = (fields.get(n) for n in SECRET_FIELDS)
    url = wiki_address(fields["server"], f"{where}.server", f"{where}.token" if token else "")
    if isinstance(fields.get("scriptpath"), str):
        url = with_script_path(url, fields["scriptpath"], f"{where}.scriptpath")
    if bool(username) != bool(password):
        raise ConfigError(f"{where}: username and password go together (a bot password); set both or neither")
    if username and token:
        raise ConfigError(f"{where}: set either token or username and password, not both")
    private = bool(fields.get("private", False))
    if private and not (username or token):
        log.warning("%s is private but has no credentials: reading it will fail", where)
    tags = fields.get("tags") or ()
    tags = (tags,) if isinstance(tags, str) else tuple(tags)
    if not all(tag.strip() for tag in tags):
        raise ConfigError(f"{where}.tags holds an empty tag")
    return WikiConfig(
        key=key, url=url, username=username, password=password, token=token,
        # Without credentials a wiki is read-only unless the file says otherwise: an
        # anonymous edit would publish the server's IP address.
        read_only=fields.get("readOnly", not (username or token)),
        private=private, tags=tags,
        attribute_edits=fields.get("attributeEdits", True), sitename=fields.get("sitename") or "")


def wiki_field(where: str, name: str, value: Any, env: Mapping[str, str], ignored: set[str]) -> Any:
    """A field of the wiki at ``where`` in the configuration file, its type checked and ``${VAR}``
    substituted; ``ignored`` gains the name of a field set that this server ignores."""
    path = f"{where}.{name}"
    if name in SECRET_FIELDS:
        return file_credential(value, env, path, header=name == "token")
    if name not in WIKI_FIELD_TYPES:
        log.warning("%s is not a field of the configuration format; ignored", path)
        return value
    check_type(path, value, WIKI_FIELD_TYPES[name])
    if name in IGNORED_WIKI_FIELDS and value is not None:
        ignored.add(name)
    if name == "server":
        return substitute_address(value, env, path)
    if isinstance(value, list):
        return [substitute(v, env, path, False) for v in value]
    return substitute(value, env, path, False) if isinstance(value, str) else value


def with_script_path(url: str, script_path: str, path: str) -> str:
    """The api.php address in the directory ``script_path`` (scriptpath, as MediaWiki's $wgScriptPath,
    from the origin, so that server may be a page URL too), unless ``url`` is one already."""
    parts = urllib.parse.urlsplit(url)
    if parts.path.endswith("api.php"):
        return url
    directory = script_path.strip().strip("/")
    if re.search(r"[\s?#:]", directory) or directory.endswith("api.php"):
        raise ConfigError(f"{path} must be a path such as /w (the directory of api.php), not {script_path!r}")
    api = f"/{directory}/api.php".replace("//", "/")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, api, "", ""))
