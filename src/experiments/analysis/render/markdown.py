"""Markdown tables, and the pages beside a report: a table longer than MAX_ROWS goes to its own
page (tables/<name>.md, to browse) with its CSV (tables/<name>.csv, the cells as shown), and the
report links it, so that the report summarises and nothing is lost."""

from __future__ import annotations

import html
import math
import re
from pathlib import Path

import jinja2
import pandas as pd
import tabulate

TEMPLATES = Path(__file__).with_name("templates")  # the reference's wording: one template a section

MAX_ROWS = 15  # the longest table a report shows inline
TABLES = "tables"  # the pages' folder, beside the report


def _cell(x) -> str:
    return str(x).replace("|", "\\|")


def table(df: pd.DataFrame | None) -> str:
    """A pipe table, cells written as given and unpadded (tabulate's pipe format pads every column
    to its widest cell, which multiplies a wide table's size; the tests read rows as written)."""
    if df is None or df.empty:
        return "_no rows_"
    lines = ["| " + " | ".join(_cell(c) for c in df.columns) + " |", "|" + "|".join("---" for _ in df.columns) + "|"]
    lines += ["| " + " | ".join(_cell(x) for x in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def page_name(caption: str, taken) -> str:
    """A file name from the caption's first words, unique among `taken`."""
    words = re.findall(r"[a-z0-9_]+", caption.lower())[:7]
    base = "-".join(words) or "table"
    name, i = base, 2
    while name in taken:
        name, i = f"{base}-{i}", i + 1
    return name


class Pages:
    """The pages a report links, by path relative to the report's folder."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self._names: set[str] = set()

    def block(self, caption: str, df: pd.DataFrame | None, back: str = "REPORT.md") -> str:
        """The caption and its table, or, where the table is long, the caption and a link to its page."""
        if df is None or len(df) <= MAX_ROWS:
            return f"*{caption}*\n\n{table(df)}"
        name = page_name(caption, self._names)
        self._names.add(name)
        md, csv = f"{TABLES}/{name}.md", f"{TABLES}/{name}.csv"
        self.files[md] = f"*{caption}*\n\n[back to {back}](../{back}) · [CSV]({name}.csv)\n\n{table(df)}\n"
        self.files[csv] = df.to_csv(index=False)
        return f"*{caption}*\n\n{len(df)} rows: [{md}]({md}) (CSV: [{csv}]({csv}))."


_STRONG = re.compile(r"\*\*(.+?)\*\*")
_EM = re.compile(r"(?<![\w*])\*(\w[^*]*?\w)\*(?![\w*])")  # *word*, not the star of d*


def inline_html(text: str) -> str:
    """One paragraph of Markdown as HTML: escaped, with its **strong** and *emphasis* kept."""
    return _EM.sub(r"<em>\1</em>", _STRONG.sub(r"<strong>\1</strong>", html.escape(text)))


def missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def num(x, d: int = 3) -> str:
    """A number in `d` significant digits, "—" where there is none."""
    if missing(x):
        return "—"
    return f"{x:.{d}g}" if abs(x) < 1e-2 or abs(x) >= 1e3 else f"{x:.{d}f}".rstrip("0").rstrip(".")


def signed(x, d: int = 3) -> str:
    return "—" if missing(x) else f"{x:+.{d}f}"


def say(name: str, **facts) -> str:
    """One paragraph from templates/<name>: its lines joined by single spaces."""
    return " ".join(environment(TEMPLATES).get_template(name).render(**facts).split())


def section_text(name: str, **facts) -> dict[str, str]:
    """A section's claim, full rule and one-sentence brief, from templates/sections/<name>.md.j2 (its
    `{% set %}` blocks), each one paragraph."""
    module = environment(TEMPLATES).get_template(f"sections/{name}.md.j2").make_module(facts)
    return {k: " ".join(str(getattr(module, k)).split()) for k in ("claim", "rule", "brief")}


def environment(folder: Path) -> jinja2.Environment:
    """The templates of `folder`, with the filters every report's wording uses: num, signed, interval
    (a row's lo and hi in brackets) and table (a DataFrame as a pipe table)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(num=num, signed=signed, table=table,
                       interval=lambda r, d=3: "—" if missing(r["lo"]) else f"[{num(r['lo'], d)}, {num(r['hi'], d)}]")
    return env
