"""``python -m mediawiki_mcp``: the command line, as the installed mediawiki-mcp command runs it."""
from .cli import main

raise SystemExit(main())
