"""The tables of docs/ as data. Tests take their expectations from the rows the documentation
shows, so a table that no longer says what the code does fails a test instead of misleading."""

import os
import re

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs")


def _cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def table(doc, first_header):
    """The body rows (lists of cells, as written) of the Markdown table in docs/DOC whose first
    header cell is FIRST_HEADER."""
    with open(os.path.join(DOCS, doc), encoding="utf-8") as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.startswith("|") and _cells(line)[0] == first_header and set(lines[i + 1]) <= set("|-: "):
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append(_cells(row))
            return rows
    raise LookupError("docs/%s has no table headed %r" % (doc, first_header))


def by_code(rows):
    """{code: row} for the rows whose second cell is a number; a cell "as NAME" is NAME's row's cell."""
    named = {r[0]: r for r in rows}
    return {int(r[1]): [named[c[3:]][j] if c.startswith("as ") else c for j, c in enumerate(r)]
            for r in rows if r[1].isdigit()}


def sentence(cell):
    """The first quoted sentence in a cell."""
    found = re.search(r'"([^"]+)"', cell)
    assert found, "no quoted sentence in %r" % cell
    return found.group(1)
