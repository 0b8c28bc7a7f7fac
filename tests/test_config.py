"""Tests: Configuration."""
from __future__ import annotations

import pytest

from mediawiki_mcp.config import Config
from mediawiki_mcp.errors import WikiError
from mediawiki_mcp.settings import DEFAULT_WIKI_URL, ConfigError
from mediawiki_mcp.state import ServerState


def test_zero_config_is_read_only_english_wikipedia() -> None:
    config = Config.from_env({})
    assert config.default_wiki == "en.wikipedia.org"
    wiki = config.wikis["en.wikipedia.org"]
    assert wiki.url == DEFAULT_WIKI_URL and wiki.read_only and not wiki.username
    assert config.content_max_bytes == 50_000


def test_credentials_make_a_wiki_writable_unless_read_only_is_set() -> None:
    env = {"MEDIAWIKI_URL": "https://wiki.example.org/w/api.php",
           "MEDIAWIKI_USERNAME": "Me@bot", "MEDIAWIKI_PASSWORD": "x" * 32}
    assert not Config.from_env(env).wikis["wiki.example.org"].read_only
    env["MEDIAWIKI_READ_ONLY"] = "true"
    assert Config.from_env(env).wikis["wiki.example.org"].read_only


@pytest.mark.parametrize("env, named", [
    ({"MEDIAWIKI_USERNAME": "Me@bot"}, "MEDIAWIKI_PASSWORD"),
    ({"MEDIAWIKI_USERNAME": "a", "MEDIAWIKI_PASSWORD": "b", "MEDIAWIKI_TOKEN": "c"}, "MEDIAWIKI_TOKEN"),
    ({"MEDIAWIKI_READ_ONLY": "maybe"}, "MEDIAWIKI_READ_ONLY"),
    ({"MCP_CONTENT_MAX_BYTES": "lots"}, "MCP_CONTENT_MAX_BYTES"),
    ({"MCP_FILE_DATA_MAX_BYTES": "12"}, "MCP_FILE_DATA_MAX_BYTES"),
    ({"MEDIAWIKI_URL": "ftp://wiki.example.org/"}, "MEDIAWIKI_URL"),
    # set but empty: these would silently change which wiki the server uses, or make it anonymous
    ({"MEDIAWIKI_URL": " "}, "MEDIAWIKI_URL is set but empty"),
    ({"CONFIG": ""}, "CONFIG is set but empty"),
    ({"MEDIAWIKI_TOKEN": " "}, "MEDIAWIKI_TOKEN is set but empty"),
    ({"MEDIAWIKI_USERNAME": "", "MEDIAWIKI_PASSWORD": ""}, "MEDIAWIKI_USERNAME is set but empty"),
    ({"MEDIAWIKI_USERNAME": "Me@bot", "MEDIAWIKI_PASSWORD": " \n"}, "MEDIAWIKI_PASSWORD is set but empty"),
    # credentials that no header or login can carry
    ({"MEDIAWIKI_TOKEN": "tok\r\nX-Injected: 1"}, "MEDIAWIKI_TOKEN"),
    ({"MEDIAWIKI_TOKEN": "jeton-é"}, "MEDIAWIKI_TOKEN"),
    ({"MEDIAWIKI_USERNAME": "Me@bot", "MEDIAWIKI_PASSWORD": "pass\x00word"}, "MEDIAWIKI_PASSWORD"),
    # a user name and password in the address: both, and not beside a token (one Authorization header)
    ({"MEDIAWIKI_URL": "http://gate@wiki.example.org/"}, "MEDIAWIKI_URL"),
    ({"MEDIAWIKI_URL": "http://:pw@wiki.example.org/"}, "MEDIAWIKI_URL"),
    ({"MEDIAWIKI_URL": "http://gate:pw@wiki.example.org/", "MEDIAWIKI_TOKEN": "tok"}, "MEDIAWIKI_URL"),
    ({"MEDIAWIKI_URL": "http://not a host/w/api.php"}, "MEDIAWIKI_URL"),
    ({"MEDIAWIKI_USER_AGENT": "Bötli/1.0 (bo@example.org)"}, "MEDIAWIKI_USER_AGENT"),
    ({"MEDIAWIKI_USER_AGENT": "Bot/1.0\r\nX-Injected: 1"}, "MEDIAWIKI_USER_AGENT"),
    ({"MCP_TRUSTED_HOSTS": "http://wiki.internal:8080"}, "MCP_TRUSTED_HOSTS"),
    ({"MCP_TRUSTED_HOSTS": "*"}, "MCP_TRUSTED_HOSTS"),
    ({"MCP_TRUSTED_HOSTS": "wiki.internal:http"}, "MCP_TRUSTED_HOSTS"),
    ({"MCP_TRUSTED_HOSTS": "wiki.internal:70000"}, "MCP_TRUSTED_HOSTS"),
    ({"MCP_UPLOAD_DIRS": "/etc/passwd"}, "MCP_UPLOAD_DIRS: upload directory '/etc/passwd' is not a directory"),
    ({"MCP_CONTENT_MAX_BYTES": "5000²"}, "MCP_CONTENT_MAX_BYTES"),
])
def test_bad_configuration_fails_naming_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        Config.from_env(env)


def test_credentials_are_trimmed_and_settings_in_every_form_are_accepted() -> None:
    """Bot passwords and tokens never hold surrounding spaces; a pasted one often does."""
    config = Config.from_env({"MEDIAWIKI_URL": "https://w.example.org/w/api.php", "MEDIAWIKI_USERNAME": " Me@bot ",
                                "MEDIAWIKI_PASSWORD": "  pw with inner spaces \n",
                                "MCP_TRUSTED_HOSTS": "wiki.internal, Wiki.Internal:8080, 10.0.0.5, ::1, [fd00::2]:8443",
                                "MCP_CONTENT_MAX_BYTES": " 20000 "})
    wiki = config.wikis["w.example.org"]
    assert (wiki.username, wiki.password) == ("Me@bot", "pw with inner spaces")
    assert config.trusted_hosts == ("wiki.internal", "wiki.internal:8080", "10.0.0.5", "::1", "[fd00::2]:8443")
    assert config.content_max_bytes == 20000
    assert Config.from_env({"MEDIAWIKI_TOKEN": "\ttok-123 "}).wikis["en.wikipedia.org"].token == "tok-123"


def test_a_user_and_password_in_the_wiki_address_leave_it_for_basic_auth() -> None:
    config = Config.from_env({"MEDIAWIKI_URL": "https://gate:p%40ss%20w0rd@Wiki.example.org/w/api.php"})
    wiki = config.wikis["wiki.example.org"]
    assert wiki.url == "https://Wiki.example.org/w/api.php" and wiki.basic_auth == ("gate", "p@ss w0rd")
    client = wiki.client()
    assert client.url == wiki.url and client.name == "Wiki.example.org"
    for shown in (repr(config), repr(client), client.name):
        assert "p@ss" not in shown and "p%40ss" not in shown and "gate" not in shown


def test_credentials_never_appear_in_repr() -> None:
    config = Config.from_env({"MEDIAWIKI_URL": "https://w.example.org/w/api.php",
                                "MEDIAWIKI_USERNAME": "Me@bot", "MEDIAWIKI_PASSWORD": "s3cr3t-pw-123"})
    client = config.wikis["w.example.org"].client()
    assert "s3cr3t" not in repr(config) and "s3cr3t" not in repr(client)


def test_wiki_argument_accepts_key_or_resource_uri() -> None:
    state = ServerState.from_config(Config.from_env({}))
    assert state.resolve_wiki(None) == "en.wikipedia.org"
    assert state.resolve_wiki("mcp://wikis/en.wikipedia.org") == "en.wikipedia.org"
    with pytest.raises(WikiError) as error:
        state.resolve_wiki("de.wikipedia.org")
    assert str(error.value).startswith("invalid_input: ") and "en.wikipedia.org" in str(error.value)
