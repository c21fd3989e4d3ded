"""Figures: samples per system, summarized as median and spread, with the ratio fprintd/touchgate."""

import statistics

BASE, PEER = "touchgate", "fprintd"  # the ratio is PEER / BASE: above 1 means touchgate is ahead on a cost


def quantile(sorted_values, q):
    """Linear interpolation between the closest ranks (numpy's default)."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summary(values):
    if not values:
        return None
    v = sorted(values)
    return {"n": len(v), "median": statistics.median(v), "min": v[0], "max": v[-1],
            "p10": quantile(v, 0.10), "p90": quantile(v, 0.90)}


class Figure:
    """One row of the table. `how` says how it is taken; `better` is "lower" or "higher"."""

    def __init__(self, key, title, unit, how, better="lower"):
        self.key, self.title, self.unit, self.how, self.better = key, title, unit, how, better
        self.samples = {BASE: [], PEER: []}
        self.notes = {}  # system -> text shown instead of a number (e.g. not measurable here)
        self.outcomes = {BASE: {}, PEER: {}}  # system -> {PAM result: count}

    def add(self, system, value):
        self.samples[system].append(value)

    def outcome(self, system, result):
        self.outcomes[system][result] = self.outcomes[system].get(result, 0) + 1

    def summary(self, system):
        return summary(self.samples[system])

    def ratio(self):
        base, peer = self.summary(BASE), self.summary(PEER)
        # Only between two amounts: a zero or negative median (no growth, a shrink) has no ratio.
        if not base or not peer or base["median"] <= 0 or peer["median"] < 0:
            return None
        return peer["median"] / base["median"]

    def to_json(self):
        return {"key": self.key, "title": self.title, "unit": self.unit, "how": self.how, "better": self.better,
                "ratio_fprintd_over_touchgate": self.ratio(),
                "systems": {s: {"summary": self.summary(s), "samples": self.samples[s],
                                "pam_results": self.outcomes[s] or None, "note": self.notes.get(s)}
                            for s in (BASE, PEER)}}


class Figures:
    """The figures of a run, in the order they were first named."""

    def __init__(self):
        self.rows = []
        self._by_key = {}

    def __call__(self, key, title, unit, how, better="lower"):
        if key not in self._by_key:
            self._by_key[key] = Figure(key, title, unit, how, better)
            self.rows.append(self._by_key[key])
        return self._by_key[key]


def number(value, unit):
    if value is None:
        return "—"
    if unit == "count":
        return "%g" % value
    magnitude = abs(value)
    digits = 0 if magnitude >= 100 else 1 if magnitude >= 10 else 2 if magnitude >= 0.1 else 3
    return "%.*f" % (digits, value)


def cell(figure, system):
    if system in figure.notes and not figure.samples[system]:
        return figure.notes[system]
    s = figure.summary(system)
    if s is None:
        return "—"
    unit = "" if figure.unit == "count" else " " + figure.unit
    if s["n"] == 1:
        return "%s%s" % (number(s["median"], figure.unit), unit)
    lo, hi = (s["p10"], s["p90"]) if s["n"] >= 10 else (s["min"], s["max"])
    return "%s%s (%s–%s)" % (number(s["median"], figure.unit), unit, number(lo, figure.unit), number(hi, figure.unit))


def table(figures):
    """The side-by-side table as text lines (median, then p10–p90 when n ≥ 10, else min–max)."""
    rows = [("", "figure", BASE, PEER, "%s/%s" % (PEER, BASE))]
    for n, f in enumerate(figures.rows, 1):
        r = f.ratio()
        rows.append((str(n), f.title, cell(f, BASE), cell(f, PEER), "—" if r is None else "%.2f×" % r))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = []
    for k, r in enumerate(rows):
        lines.append("  ".join([r[0].rjust(widths[0]), r[1].ljust(widths[1]), r[2].ljust(widths[2]),
                                r[3].ljust(widths[3]), r[4].rjust(widths[4])]).rstrip())
        if k == 0:
            lines.append("-" * len(lines[0]))
    return lines


def legend(figures):
    """How each figure is taken, numbered as in the table."""
    lines = []
    for n, f in enumerate(figures.rows, 1):
        results = "; ".join("%s: %s" % (s, ", ".join("%s ×%d" % kv for kv in sorted(o.items())))
                            for s, o in f.outcomes.items() if o)
        lines.append("%2d. %s: %s%s" % (n, f.title, f.how, " [results: %s]" % results if results else ""))
    return lines


def markdown(figures):
    """The same table in Markdown, for docs/benchmarks.md."""
    lines = ["| # | figure | %s | %s | %s/%s |" % (BASE, PEER, PEER, BASE), "|---|---|---|---|---|"]
    for n, f in enumerate(figures.rows, 1):
        r = f.ratio()
        lines.append("| %d | %s | %s | %s | %s |" % (n, f.title, cell(f, BASE), cell(f, PEER),
                                                    "—" if r is None else "%.2f×" % r))
    return lines
