"""Sign-in over HTTP for mediawiki-mcp (MCP_AUTH=login): the MCP authorization flow.

The server is its own OAuth authorization server, as the MCP specification's authorization
section describes: a client registers itself and sends the person to /authorize, which shows
them the sign-in page; they give their wiki user name and a bot password of their own; the
server logs in to the wiki with it and, once the wiki lets them in, sends the client a code,
which it exchanges for tokens. Each token then stands for that person, with the account of that
sign-in, who acts on the wiki as themselves; a request to /mcp whose token stands for no usable
person is refused (SignIns.require_person), never served as the wiki's configured account.

Only ``pip install 'mediawiki-mcp[login]'`` users need this module (and cryptography, which that
extra installs); the server imports it when MCP_AUTH=login.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import json
import logging
import secrets
import time
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cryptography.fernet import InvalidToken
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, RequireAuthMiddleware
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import (
    build_resource_metadata_url,
    create_auth_routes,
    create_protected_resource_routes,
)
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.authentication import AuthCredentials
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse
from starlette.routing import Route

from .calls import on_own_thread
from .client import Credentials
from .errors import WikiError, authentication, rate_limited
from .http import MCP_PATH
from .identity import PERSON_SCOPE, Person, bearer_token
from .login_forms import (
    AUTH_CODE_SECONDS,
    CLIENT_UNUSED_SECONDS,
    GRANT_FIELDS,
    REGISTRATION_MAX_BYTES,
    REGISTRATION_WINDOW_SECONDS,
    REGISTRATIONS_PER_ADDRESS,
    SIGN_IN_FAILURES_PER_ADDRESS,
    SIGN_IN_FAILURES_PER_NAME,
    SIGN_IN_FAILURES_PER_NAME_EVERYWHERE,
    SIGN_IN_FORM_SECONDS,
    SIGN_IN_HEADERS,
    SIGN_IN_PATH,
    SIGN_IN_SPACE,
    SIGN_IN_WINDOW_SECONDS,
    SIGN_OUT_PATH,
    STORE_DOWN_RETRY_SECONDS,
    RegisteredClient,
    address_of,
    csrf_cookie,
    hiding_link_secrets,
    message_page,
    metadata_problem,
    redirect_uri_problem,
    sdk_fields,
    secret_hash,
    sign_in_page,
    wiki_user_name,
)
from .store import STORE_DOWN, UNUSED_CLIENT
from .wire import log, logged

if TYPE_CHECKING:
    from .login_forms import SignInOptions
    from .siteinfo import SiteInfo
    from .state import ServerState


class SignIns:
    """The authorization server of MCP_AUTH=login (the SDK's OAuthAuthorizationServerProvider), its
    sign-in and sign-out pages, and the gate of /mcp, which admits a request only as the person its
    token stands for (require_person).

    Everything lives in the state store (``state.reads.store``: this process's, or shared by the
    replicas of MCP_STATE_URL), under SIGN_IN_SPACE: registered clients, pending sign-ins, codes
    and tokens (each by its hash: a copy of the store lets no one in) with the wiki account of
    their sign-in, the bot password encrypted with MCP_AUTH_SECRET's first key, and each signed-in
    person's record."""

    def __init__(self, state: ServerState, options: SignInOptions, public_url: str) -> None:
        self.state, self.options = state, options
        self.store = state.reads.store
        self.cipher = options.cipher()
        self.issuer = public_url
        self.issuer_url = AnyHttpUrl(public_url)  # as the metadata writes it: the redirect's iss must match
        self.resource = public_url + MCP_PATH

    # -- the store ---------------------------------------------------------------
    # A sign-in (a "grant") is the account the person gave on the form, with the bot password
    # encrypted: it goes from the code to the tokens it is exchanged for, and from a refresh token
    # to the tokens that replace it, so each client acts with the grants of its own sign-in. Every
    # grant also names its person's epoch, a random value of their record (``person``): a token
    # works only while that record is there with that epoch, so sign-out (which forgets the record)
    # ends every token of theirs, and a record the store lost ends them too.

    def _get(self, kind: str, name: str) -> dict[str, Any] | None:
        found = self.store.get((SIGN_IN_SPACE, kind, name))
        return json.loads(found) if found else None

    def _put(self, kind: str, name: str, value: Mapping[str, Any], ttl: float) -> None:
        self.store.put((SIGN_IN_SPACE, kind, name), json.dumps(value), ttl)

    def _forget(self, kind: str, name: str) -> None:
        self.store.forget((SIGN_IN_SPACE, kind, name))

    def _take(self, kind: str, name: str) -> dict[str, Any] | None:
        """The entry, forgotten in the same step: of two uses of a code or refresh token at once,
        on any replica, one gets it."""
        found = self.store.take((SIGN_IN_SPACE, kind, name))
        return json.loads(found) if found else None

    def _current(self, grant: Mapping[str, Any]) -> dict[str, Any] | None:
        """The record of the person a grant is for, while the grant is theirs: None once they signed
        out, or the store lost the record, and for a grant that names no epoch (stored without its
        account, which it cannot act with)."""
        found = self._get("person", str(grant.get("subject")))
        return found if found and grant.get("epoch") and found.get("epoch") == grant["epoch"] else None

    # -- the SDK's provider (its handlers check PKCE, expiry and the redirect URI) ------------

    async def get_client(self, client_id: str) -> Any:
        found = await on_own_thread(lambda: self.store.get((SIGN_IN_SPACE, "client", client_id))
                                    or self.store.get((SIGN_IN_SPACE, UNUSED_CLIENT, client_id)))
        return RegisteredClient.model_validate_json(found) if found else None

    async def register_client(self, client_info: Any) -> None:
        """Keeps a client's registration for CLIENT_UNUSED_SECONDS (_issue keeps it longer), unless
        it is too large or names a redirect URI this server does not send codes to."""
        metadata = client_info.model_dump(mode="json", exclude_none=True)
        if problem := metadata_problem(metadata):
            raise RegistrationError("invalid_client_metadata", f"Not registered: {problem}.")
        for uri in metadata.get("redirect_uris") or ():
            if problem := redirect_uri_problem(uri):
                raise RegistrationError("invalid_redirect_uri", f"Not registered: {problem}.")
        registration = client_info.model_dump_json()
        await on_own_thread(lambda: self.store.put((SIGN_IN_SPACE, UNUSED_CLIENT, client_info.client_id),
                                                   registration, CLIENT_UNUSED_SECONDS))

    async def authorize(self, client: Any, params: Any) -> str:
        if params.resource and params.resource.rstrip("/") != self.resource:
            raise AuthorizeError("invalid_target", f"This server issues tokens for {self.resource} only.")
        request = secrets.token_urlsafe(32)
        pending = {"client": client.client_id, "params": params.model_dump(mode="json"), "csrf": ""}
        await on_own_thread(lambda: self._put("request", secret_hash(request), pending, SIGN_IN_FORM_SECONDS))
        return f"{self.issuer}{SIGN_IN_PATH}?" + urllib.parse.urlencode({"request": request})

    async def load_authorization_code(self, client: Any, authorization_code: str) -> Any:
        found = await on_own_thread(lambda: self._get("code", secret_hash(authorization_code)))
        if not found or found["client_id"] != client.client_id:
            return None
        return AuthorizationCode(code=authorization_code, **sdk_fields(AuthorizationCode, found))

    async def exchange_authorization_code(self, client: Any, authorization_code: Any) -> Any:
        def exchange() -> Any:
            grant = self._take("code", secret_hash(authorization_code.code))
            if grant is None:
                raise TokenError("invalid_grant", "This authorization code was used already.")
            return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource, grant)
        return await on_own_thread(exchange)

    async def load_refresh_token(self, client: Any, refresh_token: str) -> Any:
        def load() -> dict[str, Any] | None:
            found = self._get("refresh", secret_hash(refresh_token))
            return found if found and found["client_id"] == client.client_id and self._current(found) else None
        found = await on_own_thread(load)
        return RefreshToken(token=refresh_token, **sdk_fields(RefreshToken, found)) if found else None

    async def exchange_refresh_token(self, client: Any, refresh_token: Any, scopes: list[str]) -> Any:
        def exchange() -> Any:  # a refresh token works once: the answer brings the next one
            grant = self._take("refresh", secret_hash(refresh_token.token))
            if grant is None:
                raise TokenError("invalid_grant", "This refresh token was used already.")
            self._forget("access", grant["access"])
            try:  # with the newest key, so that the old one can go once every refresh token did
                password = self.cipher.rotate(grant["account"]["password"].encode()).decode()
            except InvalidToken:
                log.warning("a refresh for %s refused: its bot password cannot be decrypted with the keys of "
                            "MCP_AUTH_SECRET", grant["subject"])
                raise TokenError("invalid_grant", "This sign-in cannot be used here any more; sign in "
                                 "again.") from None
            grant["account"] = {**grant["account"], "password": password}
            return self._issue(client.client_id, scopes, refresh_token.resource, grant)
        return await on_own_thread(exchange)

    async def load_access_token(self, token: str) -> Any:
        found = await on_own_thread(lambda: self._access(token))
        return AccessToken(token=token, **sdk_fields(AccessToken, found)) if found else None

    def _access(self, token: str) -> dict[str, Any] | None:
        """What an access token of this server grants, unless it is unknown, revoked, expired, or
        its person signed out or is no longer known."""
        found = self._unexpired(token)
        return found if found and self._current(found) else None

    def _unexpired(self, token: str) -> dict[str, Any] | None:
        found = self._get("access", secret_hash(token))
        return found if found and found["expires_at"] > time.time() else None

    async def revoke_token(self, token: Any) -> None:
        kind = "access" if isinstance(token, AccessToken) else "refresh"
        await on_own_thread(lambda: self._revoke_pair(kind, secret_hash(token.token)))

    async def exchange_identity_assertion(self, client: Any, params: Any) -> Any:
        raise TokenError("unsupported_grant_type", "People sign in here with a bot password; this server "
                         "takes no identity assertions.")

    def _issue(self, client_id: str, scopes: list[str], resource: str | None, grant: Mapping[str, Any]) -> Any:
        """A new access token and refresh token for a grant (a code's, or a refresh token's), while
        its person is signed in; their record then lasts at least as long as the new tokens."""
        current = False

        def renewed(old: str | None) -> str | None:
            nonlocal current
            current = bool(old) and json.loads(old or "{}").get("epoch") == grant.get("epoch")
            return old if current else None
        self.store.update((SIGN_IN_SPACE, "person", str(grant.get("subject"))), renewed,
                          self.options.refresh_seconds)
        if not current:
            raise TokenError("invalid_grant", "This sign-in has ended (signed out, or no longer known to this "
                             "server); sign in again.")
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        pair = [secret_hash(access), secret_hash(refresh)]
        kept = {"client_id": client_id, "scopes": scopes, "resource": resource,
                **{field: grant[field] for field in GRANT_FIELDS}}
        now, options = int(time.time()), self.options
        self._put("access", pair[0], {**kept, "expires_at": now + options.access_seconds, "refresh": pair[1]},
                  options.access_seconds)
        self._put("refresh", pair[1], {**kept, "expires_at": now + options.refresh_seconds, "access": pair[0]},
                  options.refresh_seconds)
        # a client that signed someone in is kept while their tokens may be refreshed, apart from
        # the unused ones, of which the memory store keeps fewer
        unused = (SIGN_IN_SPACE, UNUSED_CLIENT, client_id)
        if registration := self.store.get(unused):
            self.store.put((SIGN_IN_SPACE, "client", client_id), registration, options.refresh_seconds)
            self.store.forget(unused)
        else:
            self.store.update((SIGN_IN_SPACE, "client", client_id), lambda kept: kept, options.refresh_seconds)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=options.access_seconds,
                          refresh_token=refresh, scope=" ".join(scopes) or None)

    def _revoke_pair(self, kind: str, hashed: str) -> None:
        """Revokes a token and the other of its pair (the refresh token of an access token, and back)."""
        found = self._get(kind, hashed)
        self._forget(kind, hashed)
        if found:
            other = "refresh" if kind == "access" else "access"
            self._forget(other, found[other])

    # -- who a token stands for: the person of each request to /mcp ---------------------

    def signed_in(self, token: str) -> tuple[AccessToken, Person] | None:
        """What an access token grants and the person it stands for, with the wiki account of its
        sign-in; None for any token whose person cannot be used: another server's, expired,
        revoked, signed out, its person no longer known, or its bot password encrypted with a key
        that MCP_AUTH_SECRET does not hold (another replica's, or one taken out)."""
        access = self._unexpired(token)
        person = self._current(access) if access else None
        if access is None or person is None:
            return None
        account = access["account"]
        try:
            password = self.cipher.decrypt(account["password"].encode()).decode()
        except InvalidToken:
            log.warning("a token of %s refused: its bot password cannot be decrypted with the keys of "
                        "MCP_AUTH_SECRET", access["subject"])
            return None
        return (AccessToken(token=token, **sdk_fields(AccessToken, access)),
                Person(access["subject"], person["name"], {person["wiki"]: Credentials(account["username"], password)},
                       signed_in=True, sign_in=access["sign_in"]))

    # -- the sign-in page ---------------------------------------------------------------

    def _count(self, outcome: str) -> None:
        """A sign-in form's outcome, in /metrics (when it is served)."""
        if self.state.metrics is not None:
            self.state.metrics.sign_ins.labels(outcome).inc()

    def _wikis(self) -> list[tuple[str, str, str, str]]:
        """Each wiki a person may sign in to: key, site name, address, its Special:BotPasswords."""
        shown = []
        for key, wiki, client in self.state.entries():
            try:
                site: SiteInfo | None = client.site
            except WikiError as error:  # the form still works: the login says what is wrong
                log.warning("sign-in page: %s", error)
                site = None
            address = site.page_url(site.main_page) if site else wiki.url
            special = site.page_url("Special:BotPasswords") if site else wiki.url
            shown.append((key, site.name if site else wiki.sitename or key, address, special))
        return shown

    async def page(self, request: Any) -> Any:
        """GET and POST /sign-in: the form, then the check of what the person gave; while the shared
        store cannot be reached, a page saying so (nothing was signed in)."""
        try:
            return await self._page(request)
        except WikiError as error:
            if error.code != STORE_DOWN:
                raise
            self._count("store_down")
            return HTMLResponse(message_page("Sign-in unavailable", error.message), status_code=503,
                                headers={"Retry-After": str(STORE_DOWN_RETRY_SECONDS)})

    async def _page(self, request: Any) -> Any:
        form = dict(await request.form()) if request.method == "POST" else {}
        given = str(form.get("request") or request.query_params.get("request") or "")
        pending = await on_own_thread(lambda: self._get("request", secret_hash(given))) if given else None
        if pending is None:
            return HTMLResponse(message_page("This sign-in has ended", "The link was used to sign in already "
                                             "(your MCP client has the sign-in), or it is unknown or older than "
                                             f"{SIGN_IN_FORM_SECONDS // 60} minutes. To sign in again, start "
                                             "again from your MCP client."), status_code=400)
        if request.method == "POST":
            csrf = str(form.get("csrf") or "")
            if not csrf or secret_hash(csrf) != pending["csrf"] or request.cookies.get(csrf_cookie(given)) != csrf:
                log.warning("sign-in refused: a form without its CSRF token, from %s", address_of(request))
                self._count("csrf")
                return HTMLResponse(message_page("Sign-in refused", "The form did not come back as this "
                                                 "server sent it (its CSRF token is missing or wrong), so "
                                                 "nothing was signed in. Open the sign-in link again."),
                                    status_code=403)
            return await self._signed_in(request, form, given, pending)
        return await self._form(given, pending)

    async def _form(self, request: str, pending: dict[str, Any], *, wiki: str = "", username: str = "",
                    error: str = "", status: int = 200) -> Any:
        client = await self.get_client(pending["client"])
        csrf = secrets.token_urlsafe(32)

        def renew() -> list[tuple[str, str, str, str]]:
            self._put("request", secret_hash(request), {**pending, "csrf": secret_hash(csrf)},
                      SIGN_IN_FORM_SECONDS)
            return self._wikis()
        wikis = await on_own_thread(renew)
        going_to = urllib.parse.urlsplit(pending["params"]["redirect_uri"]).netloc
        name = (client.client_name if client and client.client_name else
                f"An unnamed client ({pending['client']})")
        page = sign_in_page(wikis=wikis, chosen=wiki or self.state.config.default_wiki, server=self.issuer,
                            client=name, redirect_host=going_to, hidden={"request": request, "csrf": csrf},
                            username=username, error=error)
        response = HTMLResponse(page, status_code=status, headers=SIGN_IN_HEADERS)
        response.set_cookie(csrf_cookie(request), csrf, max_age=SIGN_IN_FORM_SECONDS, path=SIGN_IN_PATH, httponly=True,
                            samesite="lax", secure=self.issuer.startswith("https:"))
        return response

    async def _signed_in(self, request: Any, form: dict[str, Any], given: str,
                         pending: dict[str, Any]) -> Any:
        """Checks the user name and bot password by logging in to the wiki; the code, or the form again."""
        wiki = str(form.get("wiki") or self.state.config.default_wiki)
        username, password = str(form.get("username") or "").strip(), str(form.get("password") or "").strip()
        known = wiki in self.state.wikis
        again = functools.partial(self._form, given, pending, wiki=wiki if known else "", username=username)
        if not known:
            self._count("unknown_wiki")
            return await again(error=f"Choose one of the wikis listed; {wiki!r} is not one.", status=400)
        if not username or not password:
            self._count("incomplete")
            return await again(error="Give both your user name and your bot password.", status=400)
        if "@" not in username:  # a main password would give the server all of the account, not what it needs
            self._count("not_bot_password")
            return await again(error="Give the user name of a bot password, such as "
                               f"{username.capitalize()}@mcp, and its password: this server does not take "
                               "your wiki password. Make one at Special:BotPasswords, as below.", status=400)
        address = request.client.host if request.client else ""
        try:
            signed = await on_own_thread(lambda: self._attempt(wiki, username, password, address))
        except WikiError as error:
            if error.code == STORE_DOWN:  # the page says so (page), counted once, as store_down
                raise
            # logged(): a name is whatever the form was sent with, a line break or a bidi mark too
            log.warning("sign-in to %s as %s from %s failed: %s", wiki, logged(username.split("@")[0]),
                        address or "-", error.category)
            self._count(error.category)
            status = {"authentication": 401, "rate_limited": 429}.get(error.category, 502)
            # a person reads this page, not a model: the advice to the model stays out of it
            return await again(error=error.message.partition("; no retry by the model")[0].rstrip(".") + ".",
                               status=status)
        code = secrets.token_urlsafe(32)
        params = pending["params"]
        grant = {"client_id": pending["client"], "scopes": params.get("scopes") or [],
                 "expires_at": time.time() + AUTH_CODE_SECONDS, "code_challenge": params["code_challenge"],
                 "redirect_uri": params["redirect_uri"], "resource": params.get("resource"),
                 "redirect_uri_provided_explicitly": params["redirect_uri_provided_explicitly"], **signed}

        def issue() -> None:
            self._put("code", secret_hash(code), grant, AUTH_CODE_SECONDS)
            self._forget("request", secret_hash(given))
        await on_own_thread(issue)
        log.info("signed in: %s from %s", logged(signed["subject"]), address or "-")
        self._count("signed_in")
        target = construct_redirect_uri(params["redirect_uri"], code=code, state=params.get("state"),
                                        iss=str(self.issuer_url))
        response = RedirectResponse(target, status_code=303, headers={"Cache-Control": "no-store"})
        response.delete_cookie(csrf_cookie(given), path=SIGN_IN_PATH)
        return response

    def _attempt(self, wiki_key: str, username: str, password: str, address: str) -> dict[str, Any]:
        """_check, unless the wiki's user of that name failed too often lately from this address or
        from all, or this address with any name; a failed login counts against all three. The
        user is named as the wiki reads the name, so that no spelling of it escapes the count."""
        _, client = self.state.wiki_and_client(wiki_key)
        try:
            lang = client.site.lang  # known already: the form showed the wiki's name
        except WikiError:
            lang = ""
        user = wiki_user_name(username, lang)
        throttled = [(json.dumps(["name", wiki_key, user, address]), SIGN_IN_FAILURES_PER_NAME),
                     (f"address:{address}", SIGN_IN_FAILURES_PER_ADDRESS),
                     (json.dumps(["name", wiki_key, user]), SIGN_IN_FAILURES_PER_NAME_EVERYWHERE)]
        if any(int(self.store.get((SIGN_IN_SPACE, "failures", name)) or 0) >= limit
               for name, limit in throttled):
            raise rate_limited("Too many failed sign-ins with this user name or from this address: try again "
                               f"in {SIGN_IN_WINDOW_SECONDS // 60} minutes.")
        try:
            return self._check(wiki_key, username, password)
        except WikiError as error:
            if error.category == "authentication":
                for name, _ in throttled:
                    self.store.update((SIGN_IN_SPACE, "failures", name), lambda old: str(int(old or 0) + 1),
                                      SIGN_IN_WINDOW_SECONDS)
            raise

    def _check(self, wiki_key: str, username: str, password: str) -> dict[str, Any]:
        """Logs in to the wiki as the person, with a client of its own; the sign-in's grant (its
        GRANT_FIELDS: the account with the bot password encrypted), their record renewed. A bot
        password's login is named after the wiki user alone (User@app is User)."""
        wiki, _ = self.state.wiki_and_client(wiki_key)
        client = self.state.make_client(dataclasses.replace(wiki, username=username, password=password, token=None))
        try:
            account = client.account
        finally:
            client.close()
        if account.anonymous:
            raise authentication(f"{wiki.key} took the login but named no user; ask its administrators.")
        person_id, epoch = f"{wiki_key}:{account.name}", ""

        def signed_in(old: str | None) -> str:  # a new epoch for a person not signed in, which no token has
            nonlocal epoch
            record = json.loads(old or "{}")
            epoch = record.get("epoch") or secrets.token_urlsafe(12)
            return json.dumps({"name": account.name, "wiki": wiki_key, "epoch": epoch,
                               "since": record.get("since") or int(time.time())})
        self.store.update((SIGN_IN_SPACE, "person", person_id), signed_in, self.options.refresh_seconds)
        return {"subject": person_id, "epoch": epoch, "sign_in": secrets.token_urlsafe(12),
                "account": {"username": username, "password": self.cipher.encrypt(password.encode()).decode()}}

    async def sign_out(self, request: Any) -> Any:
        """POST /sign-out with the person's access token: revokes every token of theirs (sign_out_person)."""
        token = bearer_token(request.headers.get("authorization", ""))
        access = await self.load_access_token(token) if token else None
        if access is None:
            return JSONResponse({"error": "invalid_token", "error_description": "Send the access token to "
                                 "sign out as 'Authorization: Bearer'."}, status_code=401,
                                headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
        await on_own_thread(lambda: self.sign_out_person(str(access.subject)))
        return JSONResponse({"signedOut": True}, headers={"Cache-Control": "no-store"})

    def sign_out_person(self, person_id: str) -> None:
        """Revokes every token of a person, from every client and replica: their record goes, and
        with it the epoch each of their codes and tokens names (so one signed in again later gets
        a new one). Ends their wiki sessions of this replica (action=logout); another replica's end
        by themselves."""
        self._forget("person", person_id)
        for client in self.state.people.forget(person_id):
            try:
                client.write({"action": "logout"})
            except WikiError as error:  # the session ends by itself later
                log.warning("sign-out: %s", error)
            client.close()
        log.info("signed out: %s", logged(person_id))

    def signed_in_people(self) -> list[dict[str, Any]]:
        """Who is signed in (``mediawiki-mcp sign-in list``), by person ID: their wiki, the accounts
        their live sign-ins gave, when they first signed in (a Unix time, or None) and how many
        refresh tokens of theirs still work; no secret."""
        now = time.time()
        records = {person_id: json.loads(value) for person_id, value in self.store.entries(SIGN_IN_SPACE, "person")}
        tokens: collections.Counter[str] = collections.Counter()
        accounts: dict[str, set[str]] = collections.defaultdict(set)
        for _, value in self.store.entries(SIGN_IN_SPACE, "refresh"):
            grant = json.loads(value)
            subject = str(grant.get("subject"))
            # a token of an ended epoch (signed out since) works no more
            if grant.get("expires_at", 0) > now and grant.get("epoch") == records.get(subject, {}).get("epoch"):
                tokens[subject] += 1
                accounts[subject].add(str((grant.get("account") or {}).get("username", "")))
        people = [{"person": person_id, "wiki": record.get("wiki", ""),
                   "account": ", ".join(sorted(accounts[person_id])) or None,
                   "since": record.get("since"), "tokens": tokens[person_id]}
                  for person_id, record in records.items()]
        return sorted(people, key=lambda person: person["person"])

    # -- serving -----------------------------------------------------------------------

    def app(self) -> Any:
        """The ASGI app of the OAuth endpoints (the SDK's), the metadata and the sign-in pages."""
        registration, revocation = ClientRegistrationOptions(enabled=True), RevocationOptions(enabled=True)
        routes = [*create_auth_routes(self, self.issuer_url, client_registration_options=registration,
                                      revocation_options=revocation),
                  *create_protected_resource_routes(AnyHttpUrl(self.resource), [self.issuer_url],
                                                    resource_name="mediawiki-mcp"),
                  Route(SIGN_IN_PATH, self.page, methods=["GET", "POST"]),
                  Route(SIGN_OUT_PATH, self.sign_out, methods=["POST"])]
        logging.getLogger("uvicorn.access").addFilter(hiding_link_secrets)

        async def store_down(request: Any, error: Exception) -> Any:
            if not isinstance(error, WikiError) or error.code != STORE_DOWN:
                raise error
            self.state.refused("store_down")
            return store_down_answer(error)
        return self._guarded(Starlette(routes=routes, exception_handlers={WikiError: store_down}))

    def require_person(self, app: Any) -> Any:
        """``app`` (/mcp) for signed-in people only. Each request's person is resolved here, once,
        from its token (signed_in), and carried in the request's scope (PERSON_SCOPE) to the
        handlers, with the SDK's user, whose session it owns. A request whose token names no usable
        person is answered 401 with WWW-Authenticate naming the protected-resource metadata, as one
        without a token, so the client signs in again: it is never served otherwise."""
        refused = RequireAuthMiddleware(app, [], build_resource_metadata_url(AnyHttpUrl(self.resource)))
        served = AuthContextMiddleware(app)  # the SDK's get_access_token() sees the token

        async def middleware(scope: Any, receive: Any, send: Any) -> None:
            token = bearer_token(Headers(scope=scope).get("authorization", ""))
            found = await on_own_thread(lambda: self.signed_in(token)) if token else None
            if found is None:  # the scope has no user: the SDK's 401
                self.state.refused("token" if token else "no_token")
                await refused({k: v for k, v in scope.items() if k not in ("user", "auth")}, receive, send)
                return
            access, person = found
            await served({**scope, "user": AuthenticatedUser(access), "auth": AuthCredentials(access.scopes),
                          PERSON_SCOPE: person}, receive, send)
        return self._guarded(middleware)

    def _guarded(self, app: Any) -> Any:
        """``app`` answering 503 while the store cannot be reached (store_down_answer), and /register
        bounded: its body, and registrations per address."""
        async def guarded(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                return await app(scope, receive, send)
            started, status = False, 0
            registering = scope["path"] == "/register" and scope["method"] == "POST"
            address = scope["client"][0] if scope.get("client") else ""

            async def sending(message: Any) -> None:
                nonlocal started, status
                # a grant refused at /token (a code or refresh token used twice, expired, or of a
                # signed-out person), whether this provider or the SDK refused it, by its RFC 6749 error
                if (scope["path"] == "/token" and status == 400 and message["type"] == "http.response.body"
                        and b'"invalid_grant"' in message.get("body", b"")):
                    self.state.refused("grant")
                if message["type"] == "http.response.start":
                    status = message["status"]
                    # counted before the client hears of it, and only what is kept: a refusal costs nothing
                    if registering and message["status"] == 201:
                        await on_own_thread(lambda: self.store.update(
                            (SIGN_IN_SPACE, "registrations", address), lambda old: str(int(old or 0) + 1),
                            REGISTRATION_WINDOW_SECONDS))
                    started = True
                await send(message)
            try:
                if scope["path"] == "/authorize":  # the SDK answers a store error there with a traceback and a 500
                    await on_own_thread(self.store.require)
                if registering:
                    refusal, replayed = await self._registration(Request(scope, receive), address)
                    if refusal is not None:
                        return await refusal(scope, receive, send)
                    receive = replayed
                await app(scope, receive, sending)
            except WikiError as error:
                if error.code != STORE_DOWN or started:
                    raise
                self.state.refused("store_down")
                await store_down_answer(error)(scope, receive, send)
        return guarded

    async def _registration(self, request: Any, address: str) -> tuple[Any, Any]:
        """A refusal of a registration (as RFC 7591 words them) from an address that registered
        too often lately, or too large to read, or None; and the request's body to read again."""
        registered = await on_own_thread(lambda: self.store.get((SIGN_IN_SPACE, "registrations", address)))
        if int(registered or 0) >= REGISTRATIONS_PER_ADDRESS:
            log.warning("registration refused: %s registered %d clients in %d minutes", address,
                        REGISTRATIONS_PER_ADDRESS, REGISTRATION_WINDOW_SECONDS // 60)
            return JSONResponse({"error": "invalid_client_metadata", "error_description": "Too many "
                                 f"registrations from this address: try again in {REGISTRATION_WINDOW_SECONDS // 60} "
                                 "minutes."}, status_code=429,
                                headers={"Retry-After": str(REGISTRATION_WINDOW_SECONDS)}), None
        body, declared = b"", request.headers.get("content-length", "")
        too_large = declared.isdigit() and int(declared) > REGISTRATION_MAX_BYTES
        if not too_large:  # read up to the bound: a body without a length may still be larger
            async for chunk in request.stream():
                body += chunk
                if too_large := len(body) > REGISTRATION_MAX_BYTES:
                    break
        if too_large:
            return JSONResponse({"error": "invalid_client_metadata", "error_description": "Not registered: the "
                                 f"registration is larger than {REGISTRATION_MAX_BYTES} bytes."}, status_code=400), None
        replayed = False

        async def receive() -> dict[str, Any]:
            nonlocal replayed
            if replayed:  # the body was read: the app waits for the client to go away
                return await request.receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return None, receive


def store_down_answer(error: WikiError) -> Any:
    """What a request that needs the store is answered while it cannot be reached: 503, to be
    tried again (the store's warning is logged once per outage, by the store)."""
    return JSONResponse({"error": "temporarily_unavailable", "error_description": error.message},
                        status_code=503, headers={"Retry-After": str(STORE_DOWN_RETRY_SECONDS),
                                                  "Cache-Control": "no-store"})
