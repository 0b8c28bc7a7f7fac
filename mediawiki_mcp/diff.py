"""Diffs: MediaWiki's HTML diff table as a compact text diff, and line and word diffs made here."""
from __future__ import annotations

import collections
import dataclasses
import html
import html.parser
import re
from collections.abc import Iterable

from .merge import line_changes
from .render import strip_tags


@dataclasses.dataclass(frozen=True)
class DiffLine:
    """One line of a diff: '-' (only in the old text), '+' (only in the new) or ' '
    (in both), with where it stands on each side: its own line number there, or for a
    side it is not on, the number of the line that follows it there."""
    kind: str
    old: int
    new: int
    text: str


DIFF_ROW = re.compile(r"<tr\b[^>]*>(.*?)</tr>", re.DOTALL)


DIFF_CELL = re.compile(r"<td\b([^>]*)>(.*?)</td>", re.DOTALL)


CLASS_ATTR = re.compile(r"""\bclass\s*=\s*["']([^"']*)["']""")


LEFT_LINE_ID = re.compile(r"""\bid\s*=\s*["']mw-diff-left-l(\d+)["']""")


LINE_COMMENT = re.compile(r"<!--LINE (\d+)-->")


SPACE_RUN = re.compile("[ \u00a0]+")


def diff_line_number(attributes: str, cell: str) -> int | None:
    """A block header cell's line number, from its structure (the left cell's id) or from
    its digits in whatever script the wiki's language writes them; never from its words."""
    for pattern, text in ((LEFT_LINE_ID, attributes), (LINE_COMMENT, cell)):
        if match := pattern.search(text):
            return int(match.group(1))
    digits = "".join(c for c in strip_tags(cell) if c.isdecimal())
    return int(digits) if digits else None


def diff_cell_text(cell: str) -> str:
    """The text of one line of a diff table cell: tags (<div>, <ins>, <del>) dropped, entities
    decoded, and the spaces MediaWiki turned into no-break spaces to keep them visible given back
    (a leading space became NBSP+space, a trailing one space+NBSP, a double one NBSP+space)."""
    inner = re.sub(r"^<div\b[^>]*>(.*)</div>$", r"\1", cell.strip(), flags=re.DOTALL)
    if inner == "\u00a0" or re.fullmatch(r"<br\s*/?>", inner):
        return ""  # an empty line, made visible

    def spaces(match: re.Match[str]) -> str:
        run = match.group(0)
        if " " not in run or "\u00a0" not in run:
            return run  # plain spaces, or the text's own no-break spaces (or a tag's spaces)
        return " " * max(len(run) - (match.start() == 0) - (match.end() == len(inner)), 1)
    return html.unescape(re.sub(r"<[^>]*>", "", SPACE_RUN.sub(spaces, inner)))


def parse_diff_table(body: str) -> list[DiffLine]:
    """Reads MediaWiki's table diff (action=compare) by its cell classes: a diff-lineno row
    starts a block; diff-deletedline, diff-addedline and diff-context cells are its lines."""
    lines: list[DiffLine] = []
    old = new = 1
    for row in DIFF_ROW.finditer(body):
        deleted = added = context = None
        numbers: list[int | None] = []
        for cell in DIFF_CELL.finditer(row.group(1)):
            attributes, content = cell.groups()
            found = CLASS_ATTR.search(attributes)
            classes = set(found.group(1).split()) if found else set()
            if "diff-lineno" in classes:
                numbers.append(diff_line_number(attributes, content))
            elif "diff-deletedline" in classes:
                deleted = diff_cell_text(content)
            elif "diff-addedline" in classes:
                added = diff_cell_text(content)
            elif "diff-context" in classes and context is None:
                context = diff_cell_text(content)
        if numbers:
            left = numbers[0] if numbers[0] is not None else old
            right = numbers[1] if len(numbers) > 1 and numbers[1] is not None else left + new - old
            old, new = left, right
        elif deleted is not None or added is not None:
            if deleted is not None:
                lines.append(DiffLine("-", old, new, deleted))
                old += 1
            if added is not None:
                lines.append(DiffLine("+", old, new, added))
                new += 1
        elif context is not None:
            lines.append(DiffLine(" ", old, new, context))
            old, new = old + 1, new + 1
    return lines


def hunk_range(start: int, count: int) -> str:
    """A side of a unified hunk header: ``5``, ``5,3``, or ``4,0`` for none after line 4."""
    if count == 1:
        return str(start)
    return f"{start - 1 if count == 0 else start},{count}"


def compact_diff(lines: list[DiffLine]) -> str:
    """The changed lines only, as unified-diff hunks: each run of changes gets an
    ``@@ -old +new @@`` header with its line numbers, removals before additions."""
    runs: list[list[DiffLine]] = []
    follows = (0, 0)  # where a line continuing the current run would stand
    for line in lines:
        if line.kind == " ":
            runs.append([])
        elif runs and runs[-1] and (line.old, line.new) == follows:
            runs[-1].append(line)
        else:
            runs.append([line])
        follows = (line.old + (line.kind == "-"), line.new + (line.kind == "+"))
    hunks = []
    for run in filter(None, runs):
        removed = [d.text for d in run if d.kind == "-"]
        added = [d.text for d in run if d.kind == "+"]
        hunks.append((f"@@ -{hunk_range(run[0].old, len(removed))} +{hunk_range(run[0].new, len(added))} @@",
                      hunk_lines(removed, added)))
    moved_lines([lines for _, lines in hunks])
    out = [line for header, shown in hunks for line in (header, *shown)]
    if any(line.startswith("~") and ESCAPED_MARKER.search(line) for line in out):
        out.insert(0, ESCAPE_NOTE)
    return "\n".join(out)


#: The most pairs of a removed and an added line moved_lines compares, so that a diff of many
#: lines stays quick.
MOVED_PAIRS_MOST = 2500


def moved_lines(hunks: list[list[str]]) -> None:
    """A line removed in one hunk and added, edited, in another (a paragraph moved and changed):
    where it was added, its word changes (``~``) replace the whole line, as a line changed in place."""
    removed = [line[1:] for lines in hunks for line in lines if line.startswith("-")]
    added = [line for lines in hunks for line in lines if line.startswith("+")]
    if len(hunks) < 2 or not removed or len(removed) * len(added) > MOVED_PAIRS_MOST:
        return
    for lines in hunks:
        own = {line[1:] for line in lines if line.startswith("-")}  # they had their chance (hunk_lines)
        for k, line in enumerate(lines):
            if line.startswith("+"):
                found = next(((old, words) for old in removed if old not in own
                              and (words := changed_line(old, line[1:])) is not None), None)
                if found:
                    removed.remove(found[0])
                    lines[k] = f"~{found[1]}"


#: How many added lines on from the last pair a removed line looks for the line it became.
PAIR_WINDOW = 3


def hunk_lines(removed: list[str], added: list[str]) -> list[str]:
    """A run of changes as diff lines: a removed line paired with an added line it became
    (changed_line) shows once as ``~``; the others are ``-`` and ``+`` lines, whole. The
    wiki's engines pair lines each their own way (the PHP engine by position, wikidiff2 by
    likeness), so pairs are found here, and a dry run reads as compare-pages after the save."""
    out: list[str] = []
    j = 0
    for text in removed:
        for k in range(j, min(j + PAIR_WINDOW, len(added))):
            if (shown := changed_line(text, added[k])) is not None:
                out += [f"+{t}" for t in added[j:k]] + [f"~{shown}"]
                j = k + 1
                break
        else:
            out.append(f"-{text}")
    return out + [f"+{t}" for t in added[j:]]


#: What a word diff compares: a word, a run of spaces, or one other character; a Han, kana or
#: Thai character is a word of its own, as those scripts run words together.
WORD_TOKEN = re.compile(r"[^\W\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\U00020000-\U0003ffff]+"
                        r"|\s+|.", re.DOTALL)


#: Unchanged text a changed line keeps either side of a change; more is cut to "…".
DIFF_CONTEXT_CHARS = 100


#: The marks of a word diff, as text may hold them too: there they are written with a backslash
#: between their two characters (ESCAPE_NOTE says so), so that a mark is always a change.
WORD_MARKER = re.compile(r"\[-|-\]|\{\+|\+\}")


ESCAPED_MARKER = re.compile(r"\[\\-|-\\\]|\{\\\+|\+\\\}")


ESCAPE_NOTE = r"(In ~ lines, [\- -\] {\+ +\} are the text's own [- -] {+ +}.)"


def unmarked(text: str) -> str:
    """``text`` with the word diff's marks it holds written apart (WORD_MARKER)."""
    return WORD_MARKER.sub(lambda mark: f"{mark.group()[0]}\\{mark.group()[1]}", text)


def changed_line(old: str, new: str) -> str | None:
    """Line ``old`` as it became ``new``, in one copy: removed words as ``[-words-]``, added ones as
    ``{+words+}``, unchanged stretches longer than DIFF_CONTEXT_CHARS either side of a change cut to
    "…". None when the two share less than half of the shorter one's words: both whole read better."""
    a, b = WORD_TOKEN.findall(old), WORD_TOKEN.findall(new)
    shorter = min(word_chars(a), word_chars(b))
    shared = collections.Counter(t for t in a if not t.isspace()) & collections.Counter(b)
    if not shorter or 2 * sum(len(t) * n for t, n in shared.items()) < shorter:
        return None  # even every shared word in order would be too few
    blocks = line_changes(a, b)
    if not blocks or 2 * (word_chars(a) - sum(word_chars(a[i1:i2]) for i1, i2, _, _ in blocks)) < shorter:
        return None
    merged: list[list[int]] = []
    for i1, i2, j1, j2 in blocks:  # changes apart by spaces alone read as one
        if merged and all(t.isspace() for t in a[merged[-1][1]:i1]):
            merged[-1][1:] = [i2, merged[-1][2], j2]
        else:
            merged.append([i1, i2, j1, j2])
    parts, done = [], 0
    for n, (i1, i2, j1, j2) in enumerate(merged):
        parts.append(unmarked(elided("".join(a[done:i1]), first=n == 0, last=False)))
        parts.append((f"[-{unmarked(''.join(a[i1:i2]))}-]" if i2 > i1 else "")
                     + (f"{{+{unmarked(''.join(b[j1:j2]))}+}}" if j2 > j1 else ""))
        done = i2
    parts.append(unmarked(elided("".join(a[done:]), first=False, last=True)))
    return "".join(parts)


def word_chars(tokens: list[str]) -> int:
    return sum(len(t) for t in tokens if not t.isspace())


def elided(same: str, first: bool, last: bool) -> str:
    """Unchanged text of a changed line, cut to DIFF_CONTEXT_CHARS after the change before it
    and before the change after it (at a space where one is near), the cut shown as "…"."""
    keep = DIFF_CONTEXT_CHARS
    if len(same) <= keep * (1 if first or last else 2) + 10:
        return same
    head = "" if first else same[:cut_at(same, keep)].rstrip() + " "
    tail = "" if last else " " + same[len(same) - cut_at(same[::-1], keep):].lstrip()
    return f"{head}…{tail}"


def cut_at(text: str, length: int) -> int:
    """Where to cut ``text`` near ``length`` characters: at the last space before it, if one is close."""
    space = text.rfind(" ", 0, length)
    return space if space > length * 3 // 4 else length


def line_diff(old: str, new: str) -> str:
    """The changed lines between two texts, in compare-pages' shape (see compact_diff): what a
    dry run shows is what compare-pages would show after the save, the changes found and placed
    as MediaWiki's engines find and place them (line_changes)."""
    a, b = old.splitlines(), new.splitlines()
    return compact_diff(diff_lines(a, b, line_changes(a, b, shown=True)))


def diff_lines(a: list[str], b: list[str], blocks: Iterable[tuple[int, int, int, int]]) -> list[DiffLine]:
    """The DiffLines of changed ``blocks`` (line_changes) between the lines ``a`` and ``b``."""
    lines: list[DiffLine] = []
    for i1, i2, j1, j2 in blocks:
        lines.append(DiffLine(" ", i1, j1, ""))  # the unchanged line before: separates runs of changes
        lines += [DiffLine("-", i1 + k + 1, j1 + 1, a[i1 + k]) for k in range(i2 - i1)]
        lines += [DiffLine("+", i2 + 1, j1 + k + 1, b[j1 + k]) for k in range(j2 - j1)]
    return lines
