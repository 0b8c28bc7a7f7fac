"""A three-way merge of lines, as MediaWiki's edit conflict resolution merges: the changes of two
edits of one base, applied together where they do not overlap."""
from __future__ import annotations

import os

from .sections import PHP_WHITESPACE

#: Past this many changed lines line_changes stops looking for the shortest edit.
MAX_EDIT_DISTANCE = 2000


def line_changes(a: list[str], b: list[str], *, shown: bool = False) -> list[tuple[int, int, int, int]]:
    """The changed blocks (a[i1:i2] became b[j1:j2]) between two lists of lines, found much as
    GNU diff finds them: common first and last lines set aside, a shortest edit (Myers), then
    each run of changes slid along equal lines as diff's shift_boundaries slides it; ``shown``:
    as MediaWiki's diff engines slide them for a diff shown (see shift_boundaries)."""
    pre = len(os.path.commonprefix([a, b]))  # of lists of lines as well as of strings
    suf = len(os.path.commonprefix([a[pre:][::-1], b[pre:][::-1]]))
    steps = shortest_edit(a[pre:len(a) - suf], b[pre:len(b) - suf])
    if steps is None:  # too far apart to search: difflib's matching will do
        import difflib  # seldom needed: left out of the start
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]
    changed = ([False] * (len(a) + 2), [False] * (len(b) + 2))  # [k + 1]: line k; both ends unchanged
    for side, k in steps:
        changed[side][pre + k + 1] = True
    shift_boundaries(a, changed[0], changed[1], shown)
    shift_boundaries(b, changed[1], changed[0], shown)
    blocks, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        i1, j1 = i, j
        i, j = unchanged_from(changed[0], i), unchanged_from(changed[1], j)  # as many unchanged either side
        if (i, j) == (i1, j1):
            i, j = i + 1, j + 1
        else:
            blocks.append((i1, i, j1, j))
    return blocks


def shortest_edit(old: list[str], new: list[str]) -> list[tuple[int, int]] | None:
    """The lines a shortest edit from ``old`` to ``new`` deletes, (0, i), and inserts, (1, j):
    Myers' greedy search; None past MAX_EDIT_DISTANCE."""
    n, m = len(old), len(new)
    if not n or not m:
        return [(0, i) for i in range(n)] + [(1, j) for j in range(m)]
    v, trace = {1: 0}, []
    for d in range(min(n + m, MAX_EDIT_DISTANCE) + 1):
        trace.append(dict(v))
        for k in range(-d, d + 1, 2):
            x = v[k + 1] if k == -d or (k != d and v[k - 1] < v[k + 1]) else v[k - 1] + 1
            y = x - k
            while x < n and y < m and old[x] == new[y]:
                x, y = x + 1, y + 1
            v[k] = x
            if x >= n and y >= m:
                steps = []
                for e in range(d, 0, -1):  # back along the path: one insertion or deletion a step
                    v, k = trace[e], x - y
                    previous = k + 1 if k == -e or (k != e and v[k - 1] < v[k + 1]) else k - 1
                    x, y = v[previous], v[previous] - previous
                    steps.append((1, y) if previous == k + 1 else (0, x))
                return steps
    return None


def shift_boundaries(lines: list[str], changed: list[bool], other: list[bool], shown: bool = False) -> None:
    """GNU diff's shift_boundaries on one side's change flags (``changed[k + 1]`` for line k):
    each run of changes moves back while the line before it equals its last, merging with
    runs before; then forward as far as it goes, merging with runs after; then, if it merged
    with none, back to where it lines up with a run of changes on the other side."""
    i = j = 0  # j: the line of the other side that lines up with line i
    while True:
        while i < len(lines) and not changed[i + 1]:
            i, j = i + 1, unchanged_from(other, j) + 1
        if i == len(lines):
            return
        i, j = shift_run(lines, changed, other, i, unchanged_from(other, j), shown)


def unchanged_from(flags: list[bool], k: int, step: int = 1) -> int:
    """The first line from line ``k`` on (``step`` -1: back) that ``flags`` do not mark changed."""
    while flags[k + 1]:
        k += step
    return k


def shift_run(lines: list[str], changed: list[bool], other: list[bool], start: int, j: int,
              shown: bool) -> tuple[int, int]:
    """Slides the run of changes that starts at line ``start`` (shift_boundaries), ``j`` the line of
    the other side that lines up with it; where the run ends then, and the other side's line there."""
    end, i = len(lines), unchanged_from(changed, start + 1)
    while True:
        run = i - start
        while start and lines[start - 1] == lines[i - 1]:
            start, i = start - 1, i - 1
            changed[start + 1], changed[i + 1] = True, False
            start = unchanged_from(changed, start - 1, -1) + 1
            j = unchanged_from(other, j - 1, -1)
        # MediaWiki's port (DiffEngine::shiftBoundaries, whose moves wikidiff2 makes too) sets
        # a run back wherever the other side goes on, not only by a run of changes there
        corresponding = i if (j < len(other) - 2 if shown else other[j]) else end
        while i != end and lines[start] == lines[i]:
            changed[start + 1], changed[i + 1] = False, True
            start, i = start + 1, unchanged_from(changed, i + 1)
            if other[j + 2]:
                corresponding = i
            j = unchanged_from(other, j + 1)
        if run == i - start:
            break
    while corresponding < i:
        start, i = start - 1, i - 1
        changed[start + 1], changed[i + 1] = True, False
        j = unchanged_from(other, j - 1, -1)
    return i, j


def merge3(base: str, mine: str, theirs: str) -> str | None:
    """A three-way merge as MediaWiki's (GNU diff3 in wfMerge): changes from ``base`` to
    ``mine`` applied to ``theirs``; None where both changed the same or adjacent lines
    differently, which the wiki refuses as an edit conflict."""
    old, ours, other = (text.rstrip(PHP_WHITESPACE).split("\n") for text in (base, mine, theirs))
    sides = (ours, other)
    blocks = sorted([(c, 0) for c in line_changes(old, ours)] + [(c, 1) for c in line_changes(old, other)])
    shift = [0, 0]  # how far each side's lines have moved from base's so far
    merged: list[str] = []
    done = k = 0
    while k < len(blocks):
        group, high = [blocks[k]], blocks[k][0][1]
        k += 1
        while k < len(blocks) and blocks[k][0][0] <= high:  # overlapping or adjacent: one hunk
            group.append(blocks[k])
            high = max(high, blocks[k][0][1])
            k += 1
        low = group[0][0][0]
        merged += old[done:low]
        chunks: list[list[str] | None] = []
        for side in (0, 1):
            own = [c for c, s in group if s == side]
            start = low + shift[side]
            shift[side] += sum((j2 - j1) - (i2 - i1) for i1, i2, j1, j2 in own)
            chunks.append(sides[side][start:high + shift[side]] if own else None)
        if chunks[0] is not None and chunks[1] is not None and chunks[0] != chunks[1]:
            return None
        merged += chunks[0] if chunks[0] is not None else chunks[1] or []
        done = high
    return "\n".join(merged + old[done:])
