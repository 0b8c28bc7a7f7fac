"""mediawiki-mcp: a Model Context Protocol server for any MediaWiki wiki.

The package its developers work in, one module a concern; users also get it as one generated
file, mediawiki_mcp.py (packaging/single_file.py). Embed it::

    from mediawiki_mcp import Config, create_server
    server = create_server(Config.from_env())

Importing it does no I/O and starts nothing.
"""
from .cli import main
from .client import MediaWikiClient
from .config import Config, WikiConfig
from .errors import WikiError
from .server import create_server
from .settings import ConfigError
from .wire import __version__

__all__ = ["Config", "ConfigError", "MediaWikiClient", "WikiConfig", "WikiError", "__version__", "create_server",
           "main"]
