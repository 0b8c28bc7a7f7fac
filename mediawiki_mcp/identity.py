"""People and their tokens: who a bearer token or a signed-in session is, and the accounts each
person acts through on each wiki."""
from __future__ import annotations

import collections
import dataclasses
import hashlib
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from .client import Credentials, MediaWikiClient
from .config import SECRET_FIELDS, WikiConfig, check_type, file_credential, json_kind, json_object, substitute
from .settings import ConfigError

#: The shortest bearer token a person may have in MCP_AUTH_TOKENS: a short one can be guessed.
MIN_PERSON_TOKEN_CHARS = 16


@dataclasses.dataclass(frozen=True)
class Person:
    """Someone who signed in to this server (a token of MCP_AUTH_TOKENS, or MCP_AUTH=login). On each
    wiki of ``accounts`` the server acts as them, never as that wiki's configured account."""
    id: str  # stable and not secret: the caller (caller_id) whose reads and idempotency keys are theirs
    name: str  # what they are called: their wiki user name, never a secret
    accounts: Mapping[str, Credentials] = dataclasses.field(default_factory=dict, repr=False)
    signed_in: bool = False  # through the sign-in page (MCP_AUTH=login), not with a token of MCP_AUTH_TOKENS
    #: the sign-in whose account this is (MCP_AUTH=login): each has a wiki session of its own, with
    #: the grants of its bot password, whatever the person's other sign-ins have
    sign_in: str = ""

    @property
    def in_log(self) -> str:
        """How the operator's log names them: one signed in as WIKI:USER, as the sign-in's own lines and
        ``mediawiki-mcp sign-in list|revoke`` do (one user name signed in to two wikis is two people,
        one perhaps with no account on the wiki of the line); one of MCP_AUTH_TOKENS by their name."""
        return self.id if self.signed_in else self.name

    def account_fix(self) -> str:
        return ("sign in again with a working one (from the MCP client, authenticate to this server again)"
                if self.signed_in else "ask this server's operator to change it (MCP_AUTH_TOKENS)")

    def account_elsewhere(self, where: str) -> str:
        """How they get an account on ``where`` (a phrase naming a wiki)."""
        return (f"A sign-in acts on one wiki: to act on {where}, sign in again choosing it" if self.signed_in
                else f"To get one, ask this server's operator to add {where} to their entry (MCP_AUTH_TOKENS)")


#: The wiki clients kept for one person (one per wiki and sign-in), the least recently used dropped.
CLIENTS_PER_PERSON = 8


class People:
    """One client per person, wiki and sign-in, logged in as them (a request's person is resolved
    where it comes in: http_app). ``required``: every request over HTTP must come from a person
    (MCP_AUTH=login); one that does not is refused (person_of)."""

    def __init__(self) -> None:
        self.required = False
        #: each client with the account it logs in as
        self._clients: collections.OrderedDict[tuple[str, str, str], tuple[Credentials, MediaWikiClient]] = (
            collections.OrderedDict())
        self._lock = threading.Lock()

    def client(self, person: Person, wiki: WikiConfig, make: Callable[[WikiConfig], MediaWikiClient]
               ) -> MediaWikiClient:
        """``person``'s client on ``wiki`` for the sign-in they call with: the clients of two of their
        sign-ins never share a wiki session, so each has the grants of its own bot password."""
        account, key = person.accounts[wiki.key], (person.id, wiki.key, person.sign_in)
        with self._lock:
            made, client = self._clients.get(key, (None, None))
            if client is None or made != account:
                client = make(dataclasses.replace(wiki, username=account.username, password=account.password,
                                                  token=account.token))
                self._clients[key] = account, client
                theirs = [other for other in self._clients if other[0] == person.id]
                for dropped in theirs[:-CLIENTS_PER_PERSON]:  # one a call may still use: no close
                    del self._clients[dropped]
            self._clients.move_to_end(key)
            return client

    def forget(self, person_id: str) -> list[MediaWikiClient]:
        """Drops a person's clients (sign-out), returning them so their wiki sessions can be ended."""
        with self._lock:
            gone = [key for key in self._clients if key[0] == person_id]
            return [self._clients.pop(key)[1] for key in gone]


#: The fields of a person in MCP_AUTH_TOKENS; each of their wikis takes those of SECRET_FIELDS.
PERSON_FIELDS = ("name", "token", "tokenSha256", "wikis")


@dataclasses.dataclass(frozen=True)
class TokenTable:
    """The people of MCP_AUTH_TOKENS by the SHA-256 of their bearer tokens (never the tokens)."""
    path: str
    people: Mapping[bytes, Person] = dataclasses.field(repr=False)

    def person(self, token: str) -> Person | None:
        # Looked up by digest: the lookup's timing tells a guesser at most how near their guess's
        # digest is to a real one's, which brings them no nearer a token.
        return self.people.get(token_digest(token))


def token_digest(token: str) -> bytes:
    """How a bearer token, code or CSRF token is kept and compared: a digest that cannot be undone."""
    return hashlib.sha256(token.encode()).digest()


def token_table(path: str, env: Mapping[str, str], wikis: Mapping[str, WikiConfig],
                shared_token: str | None = None) -> TokenTable:
    """Reads MCP_AUTH_TOKENS (docs/people.md). Every mistake is a ConfigError naming the field,
    never showing a secret; ``shared_token`` (MCP_AUTH_TOKEN) may be no person's token."""
    raw = json_object(path)
    if unknown := sorted(set(raw) - {"people"}):
        raise ConfigError(f"{path}: {unknown[0]} is not a field of the token file; it holds people")
    entries = raw.get("people")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{path}: people must be an array of at least one person, such as "
                          '[{"name": "Ana", "token": "${ANA_TOKEN}", "wikis": {"<wiki key>": '
                          '{"username": "Ana@mcp", "password": "${ANA_BOT_PASSWORD}"}}}]')
    people: dict[bytes, Person] = {}
    given = {token_digest(shared_token): "MCP_AUTH_TOKEN"} if shared_token else {}
    names: dict[str, str] = {}
    for index, entry in enumerate(entries):
        where = f"{path}: people[{index}]"
        digest, person = person_from_file(where, entry, env, wikis)
        if digest in given:
            raise ConfigError(f"{where} has the same token as {given[digest]}; each person needs a token "
                              "of their own")
        if person.name.casefold() in names:
            raise ConfigError(f"{where}.name {person.name!r} is also {names[person.name.casefold()]}'s; "
                              "the log names people by it, so each needs a name of their own")
        given[digest] = names[person.name.casefold()] = f"people[{index}]"
        people[digest] = person
    return TokenTable(path, people)


def person_from_file(where: str, entry: Any, env: Mapping[str, str], wikis: Mapping[str, WikiConfig]
                     ) -> tuple[bytes, Person]:
    """One person of the token file: the digest of their token, and who they are on which wikis."""
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be an object, not {json_kind(entry)}")
    if unknown := [name for name in entry if name not in PERSON_FIELDS]:
        raise ConfigError(f"{where}.{unknown[0]} is not a field of a person; they are "
                          f"{', '.join(PERSON_FIELDS)}")
    digest = person_token(where, entry, env)
    accounts = entry.get("wikis")
    if not isinstance(accounts, dict) or not accounts:
        raise ConfigError(f"{where}.wikis must name at least one wiki and the person's account there: "
                          '{"<wiki key>": {"username": "Ana@mcp", "password": "${ANA_BOT_PASSWORD}"}}')
    credentials = {key: account_from_file(f"{where}.wikis.{key}", key, account, env, wikis)
                   for key, account in accounts.items()}
    name = entry.get("name")
    if name is None:  # the wiki user name of the first account, without the bot password's app
        name = next((c.username.partition("@")[0] for c in credentials.values() if c.username), None)
        if name is None:
            raise ConfigError(f"{where}.name is required where no account has a username")
    check_type(f"{where}.name", name, ("string",))
    if not name.strip() or not name.isprintable():
        raise ConfigError(f"{where}.name must be a name the log can show, such as the person's wiki user name")
    person_id = hashlib.sha256(name.strip().encode()).hexdigest()[:16]
    return digest, Person(id=person_id, name=name.strip(), accounts=credentials)


def person_token(where: str, entry: Mapping[str, Any], env: Mapping[str, str]) -> bytes:
    """The SHA-256 of a person's bearer token: given itself (token: text, ${VAR} or an exec
    source), or only as its digest (tokenSha256), so that the file holds no token at all."""
    if ("token" in entry) == ("tokenSha256" in entry):
        raise ConfigError(f"{where} needs either token or tokenSha256 (the token's SHA-256 in hex), "
                          "and only one of them")
    if "tokenSha256" in entry:
        check_type(f"{where}.tokenSha256", entry["tokenSha256"], ("string",))
        hexdigest = substitute(entry["tokenSha256"], env, f"{where}.tokenSha256", True).strip().lower()
        if not re.fullmatch(r"[0-9a-f]{64}", hexdigest):
            raise ConfigError(f"{where}.tokenSha256 must be 64 hexadecimal digits, as sha256sum prints "
                              "them for the token; check it (it is not shown)")
        return bytes.fromhex(hexdigest)
    token = file_credential(entry["token"], env, f"{where}.token", header=True)
    if token is None:
        raise ConfigError(f"{where}.token is empty: give the person's token, or tokenSha256")
    if len(token) < MIN_PERSON_TOKEN_CHARS:
        raise ConfigError(f"{where}.token is shorter than {MIN_PERSON_TOKEN_CHARS} characters, which is "
                          "guessable; make one with: "
                          "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'")
    return token_digest(token)


def account_from_file(where: str, key: str, account: Any, env: Mapping[str, str],
                      wikis: Mapping[str, WikiConfig]) -> Credentials:
    """A person's account on one configured wiki: a bot password of their own, or an OAuth token."""
    if key not in wikis:
        raise ConfigError(f"{where}: {key!r} is not a configured wiki; they are {', '.join(wikis)}")
    if not isinstance(account, dict):
        raise ConfigError(f"{where} must be an object, not {json_kind(account)}")
    if unknown := [name for name in account if name not in SECRET_FIELDS]:
        raise ConfigError(f"{where}.{unknown[0]} is not a field of an account; they are "
                          f"{', '.join(SECRET_FIELDS)}")
    username, password, token = (file_credential(account.get(name), env, f"{where}.{name}", header=name == "token",
                                                 secret=name != "username") for name in SECRET_FIELDS)
    if username and not password or password and not username:
        raise ConfigError(f"{where}.{'password' if username else 'username'} is missing: a bot password "
                          "(Special:BotPasswords) is a username such as Ana@mcp and its password")
    if not (username or token) or username and token:
        raise ConfigError(f"{where} needs either username and password (a bot password of the person's own) "
                          "or token (an OAuth access token of theirs)")
    return Credentials(username, password, token)


#: The key of a request's ASGI scope that carries its person, resolved where it comes in (http_app,
#: SignIns.require_person) and read by every handler (person_of).
PERSON_SCOPE = "mediawiki_mcp.person"


def bearer_token(authorization: str) -> str:
    """The token of an Authorization header ('Bearer <token>'), or '' for none."""
    scheme, _, token = authorization.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""
