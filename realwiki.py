"""The real parts the tests and the benchmarks run: MediaWikis and a Valkey or Redis store.

A test wiki is Debian's ``mediawiki`` package on SQLite, installed into a temporary directory
and served by ``php -S`` (start_test_wiki; the facts behind it are in real-mediawiki.md):
MediaWiki 1.39 on this machine, and 1.43 in a Debian 13 root that .ci/mediawiki-1.43 builds.
Every wiki states in its LocalSettings what it would otherwise take from the machine
(MACHINE_SETTINGS), so the results do not depend on which PHP modules are installed.
WikiFarm starts the wikis of a run, several at once, and shares them.

Used by the tests (conftest.py's fixtures) and benchmarks/ (imported, never copied).
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import datetime
import fcntl
import os
import pickle
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import typing
import zlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar
from xml.sax.saxutils import escape

import requests

from mediawiki_mcp.config import wiki_key


@dataclasses.dataclass(frozen=True)
class MediaWikiInstall:
    """Where one MediaWiki version is installed: on this machine, or in a Debian root that
    chroot enters (its php sees only the files inside the root, by their paths there)."""
    version: str
    code: Path                 # MediaWiki's directory, as its php sees it
    root: Path | None = None   # the Debian root; None: this machine
    how: str = ""              # how to install it, for the error when it is missing
    lua: str = "luastandalone"  # Scribunto's engine: lua5.1 on this machine; LuaSandbox in the root

    def check(self) -> None:
        php = (self.root / "usr/bin/php").exists() if self.root else shutil.which("php")
        if not php or not self.on_host(self.code / "maintenance" / "install.php").exists():
            raise RuntimeError(f"The real-wiki tests need MediaWiki {self.version}, which is not "
                               f"installed: {self.how}")

    def on_host(self, path: Path) -> Path:
        """A path as php sees it, as this machine sees it."""
        return self.root / path.relative_to("/") if self.root else path

    def seen(self, path: Path) -> Path:
        """A path on this machine (inside the root, if any) as php sees it."""
        return Path("/") / path.relative_to(self.root) if self.root else path

    def holds(self, path: Path) -> bool:
        return self.root is not None and path.is_relative_to(self.root)

    def command(self, directory: Path, *args: str) -> list[str]:
        """A command to run with this install's php, in ``directory`` (as php sees it)."""
        inside = ["env", f"--chdir={directory}", *args]
        return ["chroot", str(self.root), *inside] if self.root else inside

    def temporary_directory(self, prefix: str) -> tempfile.TemporaryDirectory[str]:
        self.check()
        return tempfile.TemporaryDirectory(prefix=prefix, dir=self.root / "tmp" if self.root else None)


MEDIAWIKI_DIR = Path(os.environ.get("MEDIAWIKI_DIR", "/usr/share/mediawiki"))
#: Debian 12's package, on this machine.
MEDIAWIKI_1_39 = MediaWikiInstall("1.39", MEDIAWIKI_DIR, how=(
    "apt-get install mediawiki php-cli php-sqlite3 php-intl php-mbstring php-xml php-curl lua5.1 "
    "(.ci/run does it)."))
#: Debian 13's package with wikidiff2 and LuaSandbox, in a Debian 13 root that
#: .ci/mediawiki-1.43 builds once and keeps (at MEDIAWIKI_1_43_ROOT).
MEDIAWIKI_1_43_ROOT = Path(os.environ.get("MEDIAWIKI_1_43_ROOT", "/opt/mediawiki-1.43"))
MEDIAWIKI_1_43 = MediaWikiInstall("1.43", Path("/usr/share/mediawiki"), MEDIAWIKI_1_43_ROOT, how=(
    f"bash .ci/mediawiki-1.43 builds its Debian 13 root in {MEDIAWIKI_1_43_ROOT} once "
    "(MEDIAWIKI_1_43_ROOT chooses another place; .ci/run does it)."), lua="luasandbox")
INSTALLS = (MEDIAWIKI_1_39, MEDIAWIKI_1_43)


def install_holding(directory: Path) -> MediaWikiInstall:
    """The install whose php serves the wiki in ``directory``: the root's that holds it, if any."""
    return next((i for i in INSTALLS if i.holds(directory)), MEDIAWIKI_1_39)


# -- what a new wiki holds -------------------------------------------------------

BIG_SECTION_BYTES = 55_000

def long_page_text() -> str:
    """A page over 60 KB with many sections, one of them over 50 KB, with
    multi-byte characters so that every cut has to respect UTF-8."""
    parts = ["Lead paragraph of the long page. Ünïcödé façade — 日本語.\n"]
    for n in range(1, 13):
        parts.append(f"\n== Section {n} ==\nText of section {n}, naïve café line.\n")
        if n == 5:
            parts.append("\n=== Subsection 5.1 ===\nSubsection text.\n")
        if n == 7:
            line = "Big section line with ünïcödé and 日本語 characters, number {:05d}.\n"
            body: list[str] = []
            size = 0
            while size < BIG_SECTION_BYTES:
                body.append(line.format(len(body)))
                size += len(body[-1].encode())
            parts.append("".join(body))
    return "".join(parts)


SEARCH_WORD = "Zanzibarquux"
NON_ASCII_TITLE = "Café Ünïcödé — 日本語"
BATCH_TITLES = [f"Batch {n:02d}" for n in range(1, 49)]  # with Apple and Banana: 50


def seed_pages() -> dict[str, str]:
    pages = {
        "Long page": long_page_text(),
        "Target page": "The target of a redirect.\n\n== Details ==\nSome details.",
        "Redirect page": "#REDIRECT [[Target page]]",
        "Category:Fruits": "Fruits grown on the test wiki.",
        "Apple": "An apple is a fruit.\n[[Category:Fruits]]",
        "Banana": "A banana is a fruit.\n[[Category:Fruits]]",
        "Cherry": "A cherry is a fruit.\n[[Category:Fruits]]",
        NON_ASCII_TITLE: "Une page au titre non ASCII. 日本語のページ。",
        "Search target": f"This body holds the rare word {SEARCH_WORD} and nothing more.",
        "Fruit salad": "Fruit salad mixes [[Apple]], [[Banana]] and [[Cherry]].",
    }
    for title in BATCH_TITLES:
        pages[title] = f"Body of {title}."
    # For the links, categories and parsing tools (the foundation tests read none of these):
    pages.update({
        "Template:Fruitbox": '<div class="fruitbox">Fruit: {{{1|none}}}</div>',
        "Fruit bowl": "{{Fruitbox|Apple}} A bowl with [[Apple]], [[Pear]] and [[Apple redirect]]. "
                      "[[File:Red square.png]]",
        "Apple redirect": "#REDIRECT [[Apple]]",
        "Via redirect": "Links to [[Apple redirect]] only.",
        "Category:Citrus": "Citrus fruits.\n[[Category:Fruits]]",
        "Lemon": "A lemon is a citrus fruit.\n[[Category:Citrus]]",
    })
    pages.update(river_pages())
    return pages


# Pages like the ones people keep, on rivers: none is in Category:Fruits, links to a page
# the tests above list links to, or holds SEARCH_WORD, so those tests see what they saw before.
RIVER_ARTICLE = "Rhine"
REPEATED_HEADINGS_PAGE = "Danube"
ALMANAC = "River almanac"
ALMANAC_SECTIONS = 64
INFOBOX = "Template:Infobox river"

RHINE = """{{Infobox river
| name = Rhine
| length = {{#invoke:Length|km|1230}}
| source = Lake Toma
| type = main
}}
The '''Rhine''' is a river of Europe.<ref>{{Cite note|title=Rivers of Europe|publisher=Test Press|year=2001}}</ref> \
It flows into the North Sea.<ref name="delta">{{Cite note|title=The delta}}</ref>

== Course ==
The river passes several cities.<ref name="delta" />

{| class="wikitable"
! City !! Bank !! km
|-
| Basel || left || 166
|-
| Cologne || left || 688
|-
| Rotterdam || both || 1000
|}

{{:River facts}}

== References ==
<references />"""

DANUBE = """The Danube flows east.

== History ==
A Roman frontier.
=== Notes ===
History notes.

== Geography ==
It crosses ten countries.
=== Notes ===
Geography notes.

== Notes ==
General notes."""


def almanac_text() -> str:
    """About 300 KB in ALMANAC_SECTIONS sections of about 4.7 KB each, with multi-byte characters."""
    parts = ["The almanac keeps a day of river news in each section. {{River type|tributary}}\n"]
    for day in range(1, ALMANAC_SECTIONS + 1):
        parts.append(f"\n== Day {day} ==\n")
        parts += [f"Day {day}, reading {n:02d}: the water stood at {day * 7 + n} cm at the gauge "
                  "of Kōbe-façade.\n" for n in range(62)]
    return "".join(parts)


def river_pages() -> dict[str, str]:
    return {
        INFOBOX: """{| class="infobox"
! colspan="2" | {{{name|{{PAGENAME}}}}}
{{Infobox row|Length|{{{length|}}}}}
{{Infobox row|Source|{{{source|}}}}}
{{Infobox row|Type|{{River type|{{{type|}}}}}}}
|}<noinclude>
<templatedata>
{"description": "Facts about a river, in a box.", "format": "block", "params": {
 "name": {"label": "Name", "type": "string"},
 "length": {"label": "Length", "description": "Length with its unit", "type": "string"},
 "source": {"label": "Source", "type": "string"},
 "type": {"label": "Type", "description": "main or tributary", "type": "string"}}}
</templatedata>
</noinclude>""",
        "Template:Infobox row": "{{#if:{{{2|}}}|{{!}}-\n! {{{1}}}\n{{!}} {{{2}}}}}",
        "Template:River type": "{{#switch:{{{1|}}}|main=Main river|tributary=Tributary|#default=River}}",
        "Template:Cite note": ("<span class=\"citation\">''{{{title}}}''{{#if:{{{publisher|}}}|, "
                               "{{{publisher}}}}}{{#if:{{{year|}}}|, {{{year}}}}}.</span>"),
        "Module:Length": """local p = {}

function p.km(frame)
    local km = tonumber(frame.args[1]) or 0
    return string.format("%d km (%d mi)", km, math.floor(km * 0.621371 + 0.5))
end

return p""",
        "River facts": ("Facts the river articles share; only the section below is transcluded.\n"
                        "<onlyinclude>\n== Basin ==\nA river drains its basin into the sea.\n"
                        "</onlyinclude>\n== Editing notes ==\nNot transcluded."),
        RIVER_ARTICLE: RHINE,
        REPEATED_HEADINGS_PAGE: DANUBE,
        ALMANAC: almanac_text(),
    }


def png_bytes(width: int, height: int, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A valid PNG of one colour, made without an imaging library."""
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (len(data).to_bytes(4, "big") + kind + data
                + zlib.crc32(kind + data).to_bytes(4, "big"))
    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))


#: Uploaded by start_test_wiki, in Category:Fruits.
SEED_FILES = {"Red square.png": png_bytes(40, 30), "Notes.txt": b"Plain text file.\n"}


@dataclasses.dataclass(frozen=True)
class Seed:
    """What start_test_wiki puts on a new wiki: pages, then files with one upload comment."""
    pages: Mapping[str, str]
    files: Mapping[str, bytes] = dataclasses.field(default_factory=dict)
    file_comment: str = ""


def english_seed() -> Seed:
    return Seed(seed_pages(), SEED_FILES, "Seed file. [[Category:Fruits]]")


def german_seed() -> Seed:
    """A German wiki's pages, which name namespaces as German editors do, or in English."""
    return Seed({
        "Kategorie:Obst": "Obst im Testwiki.",
        "Apfel": "Ein Apfel ist Obst.\n[[Kategorie:Obst]]",
        "Birne": "Eine Birne ist Obst.\n[[Category:Obst]]",
        "Diskussion:Apfel": "Ist der Apfel rot?",
        "Vorlage:Obstkasten": '<div class="obstkasten">Obst: {{{1|keins}}}</div>',
        "Obstschale": "{{Obstkasten|Apfel}} Eine Schale mit [[Apfel]]. [[Datei:Rotes Quadrat.png]]",
    }, {"Rotes Quadrat.png": png_bytes(40, 30)}, "Testdatei. [[Kategorie:Obst]]")


PERSIAN_TITLE = "رود کارون"
PERSIAN_LINES = [f"سطر {n}: کارون از کوه‌های زاگرس سرچشمه می‌گیرد." for n in range(1, 13)]


def persian_seed() -> Seed:
    """A right-to-left wiki's pages: Persian text, and numbers in Persian digits in its messages."""
    return Seed({
        PERSIAN_TITLE: "کارون پرآب‌ترین رود ایران است.\n\n== مسیر ==\n" + "\n".join(PERSIAN_LINES),
        "بحث:" + PERSIAN_TITLE: "آیا طول رود درست است؟",
    })


@dataclasses.dataclass
class RealWiki:
    """A running MediaWiki: its addresses, accounts, and a way to stop it."""
    url: str           # origin, e.g. http://127.0.0.1:8391
    api: str           # .../w/api.php
    directory: Path
    process: subprocess.Popen[bytes] | None  # None where another process started it (WikiFarm)
    bot_user: str
    bot_password: str
    editor_user: str
    editor_password: str
    admin_password: str
    plain_user: str      # a bot password of Member, an account in no group of its own (no sysop)
    plain_password: str
    install: MediaWikiInstall = MEDIAWIKI_1_39

    @property
    def key(self) -> str:
        return wiki_key(self.api)

    @property
    def version(self) -> str:
        return self.install.version

    def env(self, **extra: str) -> dict[str, str]:
        """Environment variables that point the server at this wiki as the bot."""
        return {"MEDIAWIKI_URL": self.api, "MEDIAWIKI_USERNAME": self.bot_user,
                "MEDIAWIKI_PASSWORD": self.bot_password, "MCP_TOOLSETS": "all", **extra}

    def raw_get(self, **params: Any) -> dict[str, Any]:
        """A bare API read, bypassing the server under test."""
        params.update(format="json", formatversion="2")
        return requests.get(self.api, params=params, timeout=30).json()

    def wikitext(self, title: str) -> str:
        page = self.raw_get(action="query", prop="revisions", titles=title, rvprop="content",
                            rvslots="main")["query"]["pages"][0]
        return page["revisions"][0]["slots"]["main"]["content"]

    @property
    def pid(self) -> int:
        """The php -S process, which leads its own process group."""
        return self.process.pid if self.process else int(self.__dict__["_pid"])

    def __getstate__(self) -> dict[str, Any]:  # another process gets the wiki, not its Popen
        return {**self.__dict__, "process": None, "_pid": self.pid}

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGTERM)
        if self.process:
            self.process.wait(timeout=10)
            return
        deadline = time.monotonic() + 10
        while running(self.pid) and time.monotonic() < deadline:
            time.sleep(0.02)  # polling: a process that is not this one's child cannot be waited for


def running(pid: int) -> bool:
    """Whether a process runs: not ended, not a zombie; reaps it if it is this process's child (a
    subreaper's orphans are)."""
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG) != (0, 0):
            return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


ROUTER = r"""<?php
$path = parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH);
if (strpos($path, '/wiki/') === 0) {
    $_GET['title'] = rawurldecode(substr($path, 6));
    $_SERVER['SCRIPT_NAME'] = '/w/index.php';
    chdir(__DIR__ . '/www/w');
    require __DIR__ . '/www/w/index.php';
    return true;
}
return false;
"""

BOT_GRANTS = ("basic,highvolume,editpage,editprotected,createeditmovepage,uploadfile,"
              "uploadeditmovefile,delete,protect,rollback,viewmywatchlist,editmywatchlist")
#: Loaded on every test wiki (Debian bundles them); Scribunto runs Lua with LuaSandbox where
#: the PHP extension is installed (the 1.43 root), else with the lua5.1 program.
EXTENSIONS = "ParserFunctions,Cite,TemplateData,TextExtracts,Scribunto"


#: What MediaWiki would otherwise take from the machine it runs on, stated for every test wiki so
#: that the suite gives the same result wherever it runs. Debian's mediawiki package recommends
#: php-apcu, php-wikidiff2, php-luasandbox and imagemagick or php-gd; with APCu the installer
#: picks an object cache that makes MediaWiki's login throttle count across requests (the tests
#: that log in with a wrong password on purpose then lock the account out for five minutes),
#: wikidiff2 becomes the diff engine on its own, LuaSandbox Scribunto's engine, and GD a scaler.
#: A test that exercises a throttle or a rate limit sets it up on a wiki of its own.
MACHINE_SETTINGS = """
$wgMainCacheType = CACHE_NONE;
$wgParserCacheType = CACHE_DB;
$wgMessageCacheType = CACHE_DB;
$wgSessionCacheType = CACHE_DB;
$wgLanguageConverterCacheType = CACHE_DB;
$wgPasswordAttemptThrottle = [];
$wgAccountCreationThrottle = [];
$wgRateLimits = [];
$wgDiffEngine = 'php';
$wgDiff3 = '/usr/bin/diff3';
$wgScribuntoDefaultEngine = '{lua}';
$wgJobRunRate = 1;
$wgRunJobsAsync = false;
$wgLocaltimezone = 'UTC';
$wgUseImageResize = false;
$wgUseImageMagick = false;
$wgSVGConverter = false;
$wgShellRestrictionMethod = false;
"""


def php(directory: Path, *args: str, config: bool = True) -> str:
    """Runs a MediaWiki script of the wiki in ``directory`` with the php of its install."""
    install = install_holding(directory)
    env = dict(os.environ)
    env.pop("MW_CONFIG_FILE", None)
    if config:
        env["MW_CONFIG_FILE"] = str(install.seen(directory / "LocalSettings.php"))
    done = subprocess.run(install.command(install.code, "php", *args), env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"php {' '.join(args[:1])} failed: {done.stdout[-2000:]} {done.stderr[-2000:]}")
    return done.stdout


#: The XML namespace of Special:Export's dumps, as importDump.php reads them.
EXPORT_SCHEMA = "http://www.mediawiki.org/xml/export-0.10/"
#: When an imported page's revisions were made: one a minute from here on.
IMPORTED_FROM = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)


def imported_at(n: int) -> str:
    """The timestamp of an imported page's revision ``n`` (from 0), as the API writes it."""
    return f"{IMPORTED_FROM + datetime.timedelta(minutes=n):%Y-%m-%dT%H:%M:%SZ}"


def import_page(wiki: RealWiki, title: str, revisions: Iterable[tuple[str, str, str]]) -> None:
    """Makes a page of many revisions at once, faster than as many edits: each (user, comment, text),
    oldest first, one a minute (imported_at), written as Special:Export writes a page and imported
    with importDump.php; a user the wiki has (Admin, Editor) is credited as such."""
    parts = [f"""    <revision>
      <timestamp>{imported_at(n)}</timestamp>
      <contributor><username>{escape(user)}</username></contributor>
      <comment>{escape(comment)}</comment>
      <model>wikitext</model>
      <format>text/x-wiki</format>
      <text xml:space="preserve">{escape(text)}</text>
    </revision>""" for n, (user, comment, text) in enumerate(revisions)]
    dump = wiki.directory / f"import-{secrets.token_hex(6)}.xml"
    dump.write_text(f'<mediawiki xmlns="{EXPORT_SCHEMA}" version="0.10" xml:lang="en">\n'
                    f"  <page>\n    <title>{escape(title)}</title>\n" + "\n".join(parts)
                    + "\n  </page>\n</mediawiki>\n", encoding="utf-8")
    php(wiki.directory, "maintenance/importDump.php", str(install_holding(wiki.directory).seen(dump)))


def import_pages(wiki: RealWiki, pages: Mapping[str, str]) -> None:
    """Makes many pages at once, each its title's text, with importTextFiles.php (as the seed)."""
    directory = wiki.directory / f"pages-{secrets.token_hex(6)}"
    directory.mkdir()
    files = []
    for title, text in pages.items():
        (directory / f"{title}.txt").write_text(text, encoding="utf-8")
        files.append(str(install_holding(wiki.directory).seen(directory / f"{title}.txt")))
    php(wiki.directory, "maintenance/importTextFiles.php", "--bot", *files)


def start_test_wiki(directory: Path, name: str = "Test Wiki", seed: bool | Seed = True,
                    extra_settings: str = "", language: str = "en") -> RealWiki:
    """Installs a MediaWiki into ``directory`` and serves it; see real-mediawiki.md. The
    version is the one whose root holds ``directory`` (MediaWikiInstall.temporary_directory),
    else 1.39. ``seed``: True for english_seed(). ``extra_settings`` is PHP for LocalSettings.php,
    written before the server starts (php -S caches compiled files for 2 s, so later changes
    are not seen at once)."""
    install = install_holding(directory)
    install.check()
    seen = install.seen
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    for sub in ("db", "www/images"):
        (directory / sub).mkdir(parents=True, exist_ok=True)
    (directory / "www" / "w").symlink_to(install.code)
    (directory / "router.php").write_text(ROUTER)
    admin_password = "Admin-" + secrets.token_hex(12)
    php(directory, "maintenance/install.php", "--dbtype=sqlite", f"--dbpath={seen(directory / 'db')}",
        "--dbname=wiki", f"--server={origin}", "--scriptpath=/w", f"--confpath={seen(directory)}",
        f"--pass={admin_password}", f"--extensions={EXTENSIONS}", f"--lang={language}", name, "Admin",
        config=False)
    with open(directory / "LocalSettings.php", "a") as settings:
        settings.write(f"""
$wgArticlePath = "/wiki/$1";
$wgEnableUploads = true;
$wgUploadDirectory = "{seen(directory / 'www' / 'images')}";
$wgUploadPath = "/images";
$wgFileExtensions = array_merge($wgFileExtensions, ['txt', 'svg', 'pdf']);
$wgAllowCopyUploads = true;
$wgCopyUploadsDomains = ['127.0.0.1', 'localhost'];
$wgGroupPermissions['sysop']['upload_by_url'] = true;
$wgEnableBotPasswords = true;
""" + MACHINE_SETTINGS.replace("{lua}", install.lua) + extra_settings)
    # Bot passwords must match [0-9a-w]{{32,}}: a hex token does.
    bot_password = secrets.token_hex(16)
    php(directory, "maintenance/createBotPassword.php", "--appid=mcp", f"--grants={BOT_GRANTS}",
        "Admin", bot_password)
    editor_password = "Editor-" + secrets.token_hex(12)
    php(directory, "maintenance/createAndPromote.php", "--sysop", "Editor", editor_password)
    editor_bot_password = secrets.token_hex(16)
    php(directory, "maintenance/createBotPassword.php", "--appid=mcp", f"--grants={BOT_GRANTS}",
        "Editor", editor_bot_password)
    php(directory, "maintenance/createAndPromote.php", "Member", "Member-" + secrets.token_hex(12))
    plain_bot_password = secrets.token_hex(16)
    php(directory, "maintenance/createBotPassword.php", "--appid=mcp", f"--grants={BOT_GRANTS}",
        "Member", plain_bot_password)
    content = english_seed() if seed is True else seed or None
    if content:
        pages_dir = directory / "seed"
        pages_dir.mkdir()
        files = []
        for title, text in content.pages.items():
            path = pages_dir / f"{title}.txt"
            path.write_text(text, encoding="utf-8")
            files.append(str(seen(path)))
        php(directory, "maintenance/importTextFiles.php", "--rc", "--bot", *files)
        if content.files:
            uploads_dir = directory / "seed-files"
            uploads_dir.mkdir()
            for file_name, data in content.files.items():
                (uploads_dir / file_name).write_bytes(data)
            php(directory, "maintenance/importImages.php", "--user=Admin",
                f"--comment={content.file_comment}", str(seen(uploads_dir)))
        php(directory, "maintenance/runJobs.php")
    env = dict(os.environ, MW_CONFIG_FILE=str(seen(directory / "LocalSettings.php")),
               PHP_CLI_SERVER_WORKERS="4")
    with open(directory / "server.log", "wb") as log_file:  # the server writes to its own copy
        process = subprocess.Popen(
            install.command(seen(directory), "php", "-d", "upload_max_filesize=100M", "-d", "post_max_size=110M",
                            "-S", f"127.0.0.1:{port}", "-t", str(seen(directory / "www")),
                            str(seen(directory / "router.php"))),
            env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
    wiki = RealWiki(url=origin, api=f"{origin}/w/api.php", directory=directory, process=process,
                    bot_user="Admin@mcp", bot_password=bot_password, editor_user="Editor@mcp",
                    editor_password=editor_bot_password, admin_password=admin_password,
                    plain_user="Member@mcp", plain_password=plain_bot_password, install=install)
    deadline = time.monotonic() + 30
    while True:
        try:
            answer = wiki.raw_get(action="query", meta="siteinfo")
            if "query" in answer or "error" in answer:  # a private wiki answers readapidenied
                return wiki
        except (requests.RequestException, ValueError):
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            wiki.stop()
            raise RuntimeError(f"php -S did not answer: {(directory / 'server.log').read_text()[-2000:]}")
        time.sleep(0.05)  # polling for the server to come up, not waiting for time to pass


@dataclasses.dataclass(frozen=True)
class WikiSpec:
    """One wiki a test run can start (WIKIS)."""
    install: MediaWikiInstall
    name: str = "Test Wiki"
    language: str = "en"
    seed: Callable[[], Seed | None] = english_seed
    settings: str = ""
    files: Mapping[str, str] = dataclasses.field(default_factory=dict)  # beside its LocalSettings.php


def no_seed() -> None:
    return None


#: watch-page's expiry on the English test wikis, as on Wikimedia's wikis (MediaWiki's default
#: is off, as on the third wiki).
WATCHLIST_EXPIRY = "$wgWatchlistExpiry = true;\n"
#: The MediaWiki versions that tests marked on_every_version run on, each by a wiki of WIKIS.
VERSIONS = ("1.39", "1.43")
#: Every wiki a test run can start, by name. 1.39 diffs with MediaWiki's own PHP engine, 1.43
#: with wikidiff2, Wikipedia's engine (MediaWiki falls back to its own without a word when
#: wikidiff2 is missing: test_every_diff_engine_and_a_dry_run_show_the_same_lines checks
#: which one answered), the Persian one with the PHP engine of 1.43.
WIKIS = {
    "1.39": WikiSpec(MEDIAWIKI_1_39, settings=WATCHLIST_EXPIRY),
    "1.43": WikiSpec(MEDIAWIKI_1_43, settings=WATCHLIST_EXPIRY + "$wgDiffEngine = 'wikidiff2';\n"),
    "de": WikiSpec(MEDIAWIKI_1_43, "Testwiki", "de", german_seed, "$wgDiffEngine = 'wikidiff2';\n"),
    "fa": WikiSpec(MEDIAWIKI_1_43, "ویکی آزمایشی", "fa", persian_seed, "$wgDiffEngine = 'php';\n"),
    # articles also kept in a namespace of their own (Recipe:), which search covers
    "recipes": WikiSpec(MEDIAWIKI_1_39, "Recipes Wiki", seed=no_seed, settings=(
        '$wgExtraNamespaces[3000] = "Recipe"; $wgExtraNamespaces[3001] = "Recipe_talk";\n'
        "$wgContentNamespaces[] = 3000;\n")),
    # a second, private wiki: reading it needs an account
    "other": WikiSpec(MEDIAWIKI_1_39, "Other Wiki", seed=no_seed,
                      settings="$wgGroupPermissions['*']['read'] = false;\n"),
    # a public wiki nobody configured: add-wiki finds it
    "third": WikiSpec(MEDIAWIKI_1_39, "Third Wiki", seed=no_seed),
    # a wiki that refuses edits for its own reasons: $wgSpamRegex, and SpamBlacklist with its list
    # in a file (both refuse to save a text that holds a match)
    "spam": WikiSpec(MEDIAWIKI_1_39, seed=lambda: Seed({"Spam target": "Clean text."}), settings=(
        "$wgSpamRegex = ['/casino-jackpot-bonus/i'];\nwfLoadExtension('SpamBlacklist');\n"
        "$wgBlacklistSettings = ['spam' => ['files' => [__DIR__ . '/spam-blacklist.txt']]];\n"),
        files={"spam-blacklist.txt": "pills-cheap-example\\.com\n"}),
}

#: The wiki each fixture of the tests stands for; ``wiki`` is its test's mw_version, by default
#: the first of VERSIONS.
WIKI_FIXTURES = {"german_wiki": "de", "persian_wiki": "fa", "recipes_wiki": "recipes",
                 "other_wiki": "other", "third_wiki": "third", "spam_wiki": "spam"}


def wikis_needed(items: Iterable[Any]) -> dict[str, None]:
    """The wikis these pytest items use (through their fixtures), in the order they first do."""
    needed: dict[str, None] = {}
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "wiki" in names:
            callspec = getattr(item, "callspec", None)
            needed[callspec.params.get("mw_version", VERSIONS[0]) if callspec else VERSIONS[0]] = None
        needed.update(dict.fromkeys(WIKI_FIXTURES[n] for n in names if n in WIKI_FIXTURES))
    return needed


T = TypeVar("T")


class WikiFarm:
    """The wikis of one test run, each started once and shared by every test after, and what
    tests build on them once (servers, page histories); all stopped when the run ends.
    ``prepare`` starts wikis in the background, a few at once (an install is mostly php's CPU
    time, so two cores take about two); ``wiki`` waits for one, starting it if nobody has. A
    wiki that failed to start fails each test that needs it, without a retry.

    With ``shared`` (a directory), the farm is shared by the processes of one run (pytest-xdist's
    workers): what ``across`` makes (the wikis, and what tests build on them once) is made by
    whichever process asks first, under a lock in that directory, and handed to the others
    pickled; nothing of it is stopped here, but by stop_shared, once every process is done."""

    def __init__(self, workers: int = 3, shared: Path | None = None) -> None:
        self.shared = shared
        self._stack = contextlib.ExitStack()
        self._made: dict[Any, concurrent.futures.Future[Any]] = {}
        self._lock = threading.Lock()
        self._pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="wiki-start")

    def once(self, key: Any, make: Callable[[contextlib.ExitStack], T]) -> T:
        """``make``'s result, made on the first call with this key in this process (a call
        meanwhile waits for it); ``make`` registers any clean-up on the stack it is given."""
        with self._lock:
            made, mine = self._made.get(key), key not in self._made
            if made is None:
                made = self._made[key] = concurrent.futures.Future()
        if mine:
            try:
                with contextlib.ExitStack() as own:
                    made.set_result(make(own))
                    kept = own.pop_all()
                with self._lock:
                    self._stack.enter_context(kept)
            except Exception as problem:  # noqa: BLE001 - raised again to each test that asks
                made.set_exception(problem)
        return made.result()

    def across(self, key: str, make: Callable[[Path], T]) -> T:
        """``make(place)``, made once for the whole run: in this process, or, with a shared farm,
        by the first of its processes to ask (the others wait for it). ``place`` is a directory
        that lasts as long as the farm; ``key`` names files."""
        if self.shared is None:
            return self.once(key, lambda stack: make(Path(stack.enter_context(
                tempfile.TemporaryDirectory(prefix=f"mw-{key}-")))))
        shared = self.shared

        def fetch(_: contextlib.ExitStack) -> T:
            found = shared / f"{key}.pickle"
            with open(shared / f"{key}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
                if not found.exists():
                    place = shared / key
                    place.mkdir(exist_ok=True)
                    made = make(place)
                    found.with_suffix(".part").write_bytes(pickle.dumps(made))
                    found.with_suffix(".part").rename(found)
            return typing.cast(T, pickle.loads(found.read_bytes()))
        return self.once(key, fetch)

    def wiki(self, name: str) -> RealWiki:
        def start(_: Path) -> RealWiki:  # in the 1.43 root's /tmp if it runs there
            spec = WIKIS[name]
            spec.install.check()
            root = spec.install.root
            directory = Path(tempfile.mkdtemp(prefix=f"mw-test-{name}-", dir=root / "tmp" if root else None))
            if self.shared is None:
                self._stack.callback(shutil.rmtree, directory, ignore_errors=True)
            for name_of_file, text in spec.files.items():
                (directory / name_of_file).write_text(text)
            try:
                running = start_test_wiki(directory, spec.name, spec.seed() or False, spec.settings, spec.language)
            except BaseException:
                shutil.rmtree(directory, ignore_errors=True)
                raise
            if self.shared is None:
                self._stack.callback(running.stop)
            return running
        return self.across(f"wiki-{name}", start)

    def prepare(self, names: Iterable[str]) -> None:
        """Starts these wikis in the background; a failure waits for the test that needs it."""
        for name in names:
            self._pool.submit(self.wiki, name)

    def prepare_across(self, key: str, make: Callable[[Path], Any]) -> None:
        """Makes ``across(key, make)`` in the background."""
        self._pool.submit(self.across, key, make)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._stack.close()


def stop_shared(directory: Path) -> None:
    """Stops the wikis a shared farm started in ``directory`` and removes them, and it."""
    for made in directory.glob("wiki-*.pickle"):
        with contextlib.suppress(Exception):
            running = pickle.loads(made.read_bytes())
            running.stop()
            shutil.rmtree(running.directory, ignore_errors=True)
    shutil.rmtree(directory, ignore_errors=True)

# -- a Valkey or Redis store for replicas that share state ---------------------------------

#: Where .ci/valkey unpacks Debian 13's valkey-server (Debian 12 has none): inside the 1.43 root.
VALKEY_ROOT = Path(os.environ.get("MEDIAWIKI_1_43_ROOT", "/opt/mediawiki-1.43"))
VALKEY_DIR = "/opt/valkey"
STORE_PASSWORD = "s3cret-store-password"


class StateServer:
    """A real redis-server or valkey-server on a free loopback port, in memory only (no files), with
    a password; ``stop`` and ``start`` take it away and bring it back on the same port. ``options``:
    more of its command-line options (such as a rename-command)."""

    def __init__(self, kind: str, *options: str) -> None:
        self.kind, self.port, self.options = kind, free_port(), options
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://:{STORE_PASSWORD}@127.0.0.1:{self.port}/0"

    @property
    def shown(self) -> str:  # as the server names it: no password
        return f"redis://127.0.0.1:{self.port}/0"

    def command(self) -> list[str]:
        options = ["--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                   "--requirepass", STORE_PASSWORD, *self.options]
        if self.kind == "redis":
            server = shutil.which("redis-server")
            assert server, "redis-server is not installed: apt-get install redis-server (.ci/run does)"
            return [server, *options]
        assert (VALKEY_ROOT / VALKEY_DIR.lstrip("/") / "usr/bin/valkey-check-rdb").exists(), \
            "valkey-server is not unpacked in the Debian 13 root: bash .ci/valkey (.ci/run does)"
        return ["chroot", str(VALKEY_ROOT), "env", f"LD_LIBRARY_PATH={VALKEY_DIR}/usr/lib/x86_64-linux-gnu",
                f"{VALKEY_DIR}/usr/bin/valkey-server", *options, "--dir", "/tmp"]

    def start(self) -> None:
        import redis
        self.process = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True)
        client = redis.Redis.from_url(self.url, socket_timeout=1)
        deadline = time.monotonic() + 30
        while True:  # polling for the server to come up
            try:
                assert client.ping()
                info = client.info("server")
                break
            except redis.ConnectionError:
                assert self.process.poll() is None and time.monotonic() < deadline, f"{self.kind} did not start"
                time.sleep(0.05)
        assert ("valkey_version" in info) == (self.kind == "valkey"), info

    def stop(self) -> None:
        assert self.process
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def client(self) -> Any:
        import redis
        return redis.Redis.from_url(self.url, decode_responses=True)
