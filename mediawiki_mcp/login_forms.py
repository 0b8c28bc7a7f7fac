"""The sign-in's forms and rules (MCP_AUTH=login): its options, the sign-in page, and the checks of
a user name, a redirect URI and a client's metadata."""
from __future__ import annotations

import dataclasses
import html
import logging
import re
import unicodedata
import urllib.parse
from collections.abc import Mapping
from typing import Any, ClassVar

from cryptography.fernet import Fernet, MultiFernet
from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull

from .http import MCP_PATH
from .identity import token_digest
from .settings import DEFAULT_ACCESS_TOKEN_SECONDS, DEFAULT_REFRESH_TOKEN_SECONDS, LOOPBACK_NAMES, ConfigError, setting
from .siteinfo import RIGHTS

SIGN_IN_PATH = "/sign-in"


SIGN_OUT_PATH = "/sign-out"


#: The "wiki" of the state store's entries about sign-ins (StateKey), apart from every wiki's own.
SIGN_IN_SPACE = "sign-in"


#: How long a person has to fill in the sign-in form, and a client to exchange its code.
SIGN_IN_FORM_SECONDS = 15 * 60


AUTH_CODE_SECONDS = 5 * 60


#: Failed sign-ins the form allows before it stops trying, for SIGN_IN_WINDOW_SECONDS after the
#: last: a user name of a wiki from one address; one address with any names (many people may
#: share one); and a user name from all addresses together, against guesses spread over many.
#: A name locked by one address stays open to the others until the last limit: a guesser cannot
#: lock its owner out by failing on purpose.
SIGN_IN_FAILURES_PER_NAME = 5


SIGN_IN_FAILURES_PER_ADDRESS = 20


SIGN_IN_FAILURES_PER_NAME_EVERYWHERE = 25


SIGN_IN_WINDOW_SECONDS = 15 * 60


#: What MediaWiki takes out of a user name, as out of any title, before reading it: the marks
#: and embeddings that set the direction of text (MediaWikiTitleCodec); and what it reads as one
#: space, trimmed at the ends.
DIRECTION_MARKS = re.compile("[\u200e\u200f\u202a-\u202e]")


TITLE_SPACES = re.compile("[ _\u00a0\u1680\u180e\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")


#: Languages whose wikis capitalise i as İ (Language::ucfirst of their language classes).
DOTTED_CAPITAL_I = ("tr", "az", "crh", "kaa", "kk-latn")


#: Registered clients: bounds of their metadata (RFC 7591), so that registering, which needs no
#: sign-in, cannot fill the store; a client that never completes a sign-in is forgotten after
#: CLIENT_UNUSED_SECONDS, one that did after the refresh tokens' lifetime.
REGISTRATION_MAX_BYTES = 16 * 1024


CLIENT_NAME_MAX_CHARS = 200


REDIRECT_URIS_MAX = 10


METADATA_TEXT_MAX_CHARS = 2000


METADATA_LIST_MAX = 10


CLIENT_UNUSED_SECONDS = 60 * 60


REGISTRATIONS_PER_ADDRESS = 20


REGISTRATION_WINDOW_SECONDS = 15 * 60


#: What a request answered 503 while the store cannot be reached tells its client to wait.
STORE_DOWN_RETRY_SECONDS = 10


#: The cookie that carries the sign-in form's CSRF token beside its hidden field (csrf_cookie).
CSRF_COOKIE = "mediawiki_mcp_csrf"


#: What a code and each token keep of the sign-in they come from: the person (subject), the wiki
#: account they gave (their user name and the bot password, encrypted), the epoch of the person's
#: record it is valid in, and an ID of the sign-in, whose wiki session is its own (People.client).
GRANT_FIELDS = ("subject", "account", "epoch", "sign_in")


#: The sign-in page is shown in no other site's frame, where a person could be tricked into
#: signing in (clickjacking), and loads nothing from anywhere; no form-action rule, as browsers
#: would apply it to the redirect back to the client too. Its referrer policy (same-origin, in
#: the page) keeps the sign-in's address from the wiki's links; no-referrer would make browsers
#: send its form with "Origin: null", which the Origin check refuses.
SIGN_IN_HEADERS = {"Cache-Control": "no-store", "X-Frame-Options": "DENY", "Content-Security-Policy":
                   "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"}


MAKE_FERNET_KEY = "python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'"


@dataclasses.dataclass(frozen=True)
class SignInOptions:
    """How people sign in (MCP_AUTH=login): the origin clients reach this server at ('' for the
    address it listens on), the keys that encrypt their bot passwords, and how long tokens work."""
    keys: tuple[str, ...] = dataclasses.field(repr=False)
    public_url: str = ""
    access_seconds: int = DEFAULT_ACCESS_TOKEN_SECONDS
    refresh_seconds: int = DEFAULT_REFRESH_TOKEN_SECONDS
    #: The SDK's OAuth endpoints and metadata. Browser clients (the MCP Inspector) call them from
    #: other origins, which they allow (CORS): none acts for anyone without the secrets in its request.
    OAUTH_PATHS: ClassVar[tuple[str, ...]] = (
        "/authorize", "/token", "/register", "/revoke", "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-protected-resource" + MCP_PATH)

    def cipher(self) -> MultiFernet:
        """The keys as a MultiFernet (the first encrypts, all decrypt); a ConfigError when a key is
        no Fernet key."""
        try:
            return MultiFernet([Fernet(key) for key in self.keys])
        except ValueError:
            raise ConfigError("MCP_AUTH_SECRET must hold Fernet keys (32 bytes in URL-safe base64), "
                              f"comma-separated; make one with: {MAKE_FERNET_KEY}. The value given is not "
                              "shown.") from None


def sign_in_options(env: Mapping[str, str], loopback: bool, decrypts: bool = True) -> SignInOptions:
    """The sign-in's options of MCP_AUTH=login, checked (its keys decrypt). ``decrypts``: False for
    what encrypts and decrypts no bot password (sign-in list and revoke), which then needs no
    MCP_AUTH_SECRET: a key of its own stands in, with which nothing stored was encrypted."""
    keys, public_url = setting(env, "MCP_AUTH_SECRET"), setting(env, "MCP_PUBLIC_URL")
    if not keys and not decrypts:
        keys = (Fernet.generate_key().decode(),)
    if not keys:
        raise ConfigError("MCP_AUTH=login needs MCP_AUTH_SECRET, the key that encrypts the bot passwords "
                          f"people sign in with: make one with {MAKE_FERNET_KEY}")
    if not public_url and not loopback:
        raise ConfigError("MCP_AUTH=login beyond this machine needs MCP_PUBLIC_URL, the https:// origin "
                          "clients reach this server at (through a TLS proxy): OAuth accepts no other")
    options = SignInOptions(keys, public_url or "", setting(env, "MCP_ACCESS_TOKEN_SECONDS"),
                            setting(env, "MCP_REFRESH_TOKEN_SECONDS"))
    # a person's record lasts as long as a refresh token, so it would be gone before the access token
    if options.refresh_seconds < options.access_seconds:
        raise ConfigError(f"MCP_REFRESH_TOKEN_SECONDS ({options.refresh_seconds}) must be at least "
                          f"MCP_ACCESS_TOKEN_SECONDS ({options.access_seconds}): a refresh token brings the next "
                          "access token, so it cannot end first")
    options.cipher()
    return options


def sdk_fields(model: Any, entry: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a stored entry that one of the SDK's models (AccessToken, ...) has."""
    return {name: value for name, value in entry.items() if name in model.model_fields and name != "token"}


def hiding_link_secrets(record: logging.LogRecord) -> bool:
    """uvicorn's access log (at DEBUG) without the secret of a sign-in link (/sign-in?request=...):
    whoever has it may fill in that person's sign-in form, within its 15 minutes."""
    if isinstance(record.args, tuple) and len(record.args) > 2 and isinstance(record.args[2], str):
        path = re.sub(r"([?&]request=)[^&\s]+", r"\1(hidden)", record.args[2])
        record.args = (*record.args[:2], path, *record.args[3:])
    return True


def address_of(request: Any) -> str:
    """The address a request came from, as the log shows it (a trusted proxy's X-Forwarded-For, read
    by uvicorn), or '-'."""
    return request.client.host if request.client else "-"


def csrf_cookie(request: str) -> str:
    """The name of the CSRF cookie of one pending sign-in: one of its own, so that two sign-ins in
    one browser at once (two clients, or one that asked twice) do not overwrite each other's."""
    return f"{CSRF_COOKIE}_{secret_hash(request)[:16]}"


def secret_hash(secret: str) -> str:
    """How a token, code or CSRF token is kept in the state store: its token_digest, as text."""
    return token_digest(secret).hex()


def wiki_user_name(username: str, lang: str) -> str:
    """The wiki user a bot password's login name (User@app) stands for, as MediaWiki reads it:
    in NFC (as it reads all input), without direction marks, runs of spaces and underscores one
    space, trimmed, and the first letter capitalised (the User namespace always is, whatever
    $wgCapitalLinks says), as the wiki's language does."""
    name = unicodedata.normalize("NFC", username).partition("@")[0]
    name = TITLE_SPACES.sub(" ", DIRECTION_MARKS.sub("", name)).strip()
    first = "\u0130" if name[:1] == "i" and lang in DOTTED_CAPITAL_I else name[:1].upper()
    return first + name[1:]


def redirect_uri_problem(uri: str) -> str | None:
    """Why a client may not register a redirect URI, or None: the MCP authorization specification
    takes https:// ones and http:// ones on this machine (loopback) only, where no one else can
    read the code on its way; and no fragment (RFC 6749, section 3.1.2)."""
    if len(uri) > METADATA_TEXT_MAX_CHARS:
        return f"a redirect URI is longer than {METADATA_TEXT_MAX_CHARS} characters"
    parts = urllib.parse.urlsplit(uri)
    if parts.fragment:
        return f"the redirect URI {uri!r} has a fragment (#...), which OAuth does not allow"
    if parts.scheme == "https" and parts.hostname or parts.scheme == "http" and parts.hostname in LOOPBACK_NAMES:
        return None
    return (f"the redirect URI {uri!r} is neither https:// nor http:// on this machine (127.0.0.1, [::1] "
            "or localhost), as the MCP authorization specification asks")


def metadata_problem(metadata: Mapping[str, Any]) -> str | None:
    """Why a client's registration is too large to keep, or None."""
    if len(metadata.get("client_name") or "") > CLIENT_NAME_MAX_CHARS:
        return f"client_name is longer than {CLIENT_NAME_MAX_CHARS} characters"
    if len(metadata.get("redirect_uris") or ()) > REDIRECT_URIS_MAX:
        return f"redirect_uris lists more than {REDIRECT_URIS_MAX} URIs"
    for field, value in metadata.items():
        if isinstance(value, str) and len(value) > METADATA_TEXT_MAX_CHARS:
            return f"{field} is longer than {METADATA_TEXT_MAX_CHARS} characters"
        if isinstance(value, list) and len(value) > METADATA_LIST_MAX:
            return f"{field} lists more than {METADATA_LIST_MAX} values"
    return None


def loopback_port_apart(registered: str, given: str) -> bool:
    """Whether a redirect URI differs from a registered one only in the port of a loopback host:
    a native app listens on whichever port is free when it asks (RFC 8252, section 7.3)."""
    one, other = urllib.parse.urlsplit(registered), urllib.parse.urlsplit(given)
    return (one.scheme == other.scheme == "http" and one.hostname == other.hostname
            and one.hostname in LOOPBACK_NAMES
            and (one.path, one.query) == (other.path, other.query))


class RegisteredClient(OAuthClientInformationFull):
    """The SDK's registered client, but for the port of a loopback redirect: the SDK compares
    redirect URIs exactly, which would refuse a native app's redirect to a port other than the one
    it registered with. A redirect URI no longer registered (redirect_uri_problem) is refused as
    well, for a client registered before they were."""

    def validate_redirect_uri(self, redirect_uri: Any) -> Any:
        if redirect_uri is not None and any(loopback_port_apart(str(uri), str(redirect_uri))
                                            for uri in self.redirect_uris or ()):
            chosen = redirect_uri
        else:
            chosen = super().validate_redirect_uri(redirect_uri)
        if problem := redirect_uri_problem(str(chosen)):
            raise InvalidRedirectUriError(f"Refused: {problem}.")
        return chosen


def sign_in_page(*, wikis: list[tuple[str, str, str, str]], chosen: str, server: str, client: str,
                 redirect_host: str, hidden: dict[str, str], username: str = "", error: str = "") -> str:
    """The sign-in form: plain HTML, no script. ``wikis``: (key, site name, address, address of its
    Special:BotPasswords) of each wiki a person may sign in to, ``chosen`` preselected; ``hidden``:
    the form's hidden fields (the pending sign-in and its CSRF token)."""
    e = html.escape
    name = {key: site for key, site, _, _ in wikis}[chosen]
    grants = sorted({grant for _, grant in RIGHTS.values()})
    if len(wikis) > 1:
        options = "".join(f'<option value="{e(key)}"{" selected" * (key == chosen)}>{e(site)} ({e(address)})'
                          "</option>" for key, site, address, _ in wikis)
        chooser = f'<p><label>Wiki <select name="wiki">{options}</select></label></p>'
    else:
        chooser = f'<input type="hidden" name="wiki" value="{e(chosen)}">'
    how = "".join(f'<li>On {e(site)}: <a href="{e(special)}">Special:BotPasswords</a></li>'
                  for _, site, _, special in wikis)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="referrer" content="same-origin"><title>Sign in to {e(name)}</title>
<style>body{{font:16px sans-serif;max-width:36em;margin:2em auto;padding:0 1em}}
label{{display:block;margin:.5em 0}}input[type=text],input[type=password],select{{width:100%}}
.error{{color:#b00;font-weight:bold}}.consent{{background:#eef;padding:.5em}}</style></head>
<body><h1>Sign in to {e(name)}</h1>
<p>Wiki: {"".join(f"<b>{e(site)}</b> ({e(address)}) " for key, site, address, _ in wikis if key == chosen)}
through the MCP server <b>mediawiki-mcp</b> at {e(server)}.</p>
<p class="consent"><b>{e(client)}</b> asks to read and edit the wiki as you. After you sign in, you go back
to it at <b>{e(redirect_host)}</b>.</p>
{f'<p class="error" role="alert">{e(error)}</p>' if error else ""}
<form method="post" action="{SIGN_IN_PATH}">
{"".join(f'<input type="hidden" name="{e(field)}" value="{e(value)}">' for field, value in hidden.items())}
{chooser}
<label>User name <input type="text" name="username" value="{e(username)}" autocomplete="username"
required></label>
<label>Bot password <input type="password" name="password" autocomplete="current-password" required></label>
<p><button type="submit">Sign in</button></p></form>
<h2>Making a bot password</h2>
<p>Sign in with a bot password of your own, not your wiki password: it can do only what you allow, and you
can revoke it there at any time.</p>
<ol><li>Open Special:BotPasswords while logged in to the wiki:<ul>{how}</ul></li>
<li>Name it, such as <code>mcp</code>, and tick the grants the tools need: {e(", ".join(grants))}
(basic rights come with every bot password).</li>
<li>Create it, then give here the user name it shows (such as <code>YourName@mcp</code>) and its
password.</li></ol>
</body></html>
"""


def message_page(title: str, text: str) -> str:
    """A page that only says something (an expired sign-in, a refused form)."""
    title, text = html.escape(title), html.escape(text)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>'
            f'<body><h1>{title}</h1><p class="error">{text}</p></body></html>\n')
