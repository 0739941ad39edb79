"""The answer in two minutes (ANSWER.md, the README's and the report's first screen): does
scaling matter, and is additive alike at small d_k, per cell, from the clause table; Python
computes the facts, templates/answer_prose.md.j2 says them (in Markdown for ANSWER.md, the README
and the report, paragraph by paragraph in HTML for the dashboard)."""

from __future__ import annotations

import math

import pandas as pd

from experiments.analysis.render import clause_table
from experiments.analysis.render.markdown import TEMPLATES, environment, inline_html, signed

TEXT_TASKS = ("charlm",)  # cells scored in bits per character
ANSWERS = {"yes": "yes", "no": "no", "unclear": "unclear", "few": "too few seeds"}


def _deciding(rows: pd.DataFrame, prefix: str) -> pd.Series | None:
    hit = rows[rows["clause"].str.startswith(prefix) & rows["decides"]]
    return None if hit.empty else hit.iloc[0]


def _bits(quality, cell) -> tuple[float, float]:
    """(unscaled, scaled) validation bits per character at the cell's largest d_k (NaN off text)."""
    for c in quality.variants:
        if f"{c.task}/{c.optimizer}" != cell.name:
            continue
        rows = {r.variant: r for r in c.rows if r.d_k == max(x.d_k for x in c.rows)}
        if "scaled" in rows and "unscaled" in rows:
            return rows["unscaled"].val_bpc[0], rows["scaled"].val_bpc[0]
    return math.nan, math.nan


def cell_facts(quality, cell, clauses: pd.DataFrame) -> dict:
    rows = clauses[(clauses["cell"] == cell.name) & (clauses["sub_claim"] == quality.number)]
    fix = _deciding(rows, "(b)")
    tost = rows[rows["clause"].str.contains("alike") & rows["test"].str.contains("TOST") & rows["d_k"].notna()]
    alike = {int(r.d_k): dict(shown=r.shown is not pd.NA and bool(r.shown), delta=r.estimate)
             for r in tost.itertuples() if r.d_k in tuple(cell.alike.d_ks)}
    wide = cell.controls.wide.wide if cell.controls is not None else None
    cross = cell.crossover
    unscaled_bpc, scaled_bpc = _bits(quality, cell)
    return dict(name=cell.name, text=cell.name.split("/")[0] in TEXT_TASKS, verdict=cell.verdict.value,
                margin=float(cell.margin),
                fix=None if fix is None or pd.isna(fix.d_k) else dict(answer=fix.answer, d_k=int(fix.d_k), delta=fix.estimate,
                                                  lo=fix.lo, hi=fix.hi),
                alike=dict(sorted(alike.items(), reverse=True)),
                d_star=None if cross is None or cross.d_star is None else
                dict(est=cross.d_star, lo=cross.lo, hi=cross.hi),
                wide_smallest=None if wide is None else wide.smallest,
                unscaled_bpc=unscaled_bpc, scaled_bpc=scaled_bpc)


def facts(sections, clauses: pd.DataFrame | None = None) -> dict | None:
    """Every number the answer says, by name; None where no section judged sub-claim 4 per cell."""
    quality = next((s for s in sections if s.cells), None)
    if quality is None:
        return None
    clauses = clause_table.table(sections) if clauses is None else clauses
    cells = [cell_facts(quality, c, clauses) for c in quality.cells]
    fixed = [c for c in cells if c["fix"] and c["fix"]["answer"] == "yes"]
    toy = [c for c in fixed if not c["text"]]
    wide = [c for c in cells if c["wide_smallest"] is not None and not math.isnan(c["wide_smallest"][1])]
    d_ks = sorted({d for c in cells for d in c["alike"]}, reverse=True)
    alike = [dict(d_k=d, shown=sum(c["alike"].get(d, {}).get("shown", False) for c in cells),
                  measured=sum(d in c["alike"] for c in cells)) for d in d_ks]
    margins = {kind: sorted({c["margin"] for c in cells if c["text"] == text}) for kind, text in (("toy", False), ("text", True))}
    return dict(cells=cells, fixed=fixed, alike=alike, toy=toy, text=[c for c in fixed if c["text"]], margins=margins,
                wide=wide, wide_ahead=[c for c in wide if c["wide_smallest"][1] > 0],
                d_stars=[c["d_star"]["est"] for c in cells if c["d_star"]])


def _alike_words(c: dict) -> str:
    return " · ".join(f"{d}: {'yes' if a['shown'] else 'not shown'} ({signed(a['delta'])})"
                      for d, a in c["alike"].items()) or "not measured"


def _interval(x: dict | None) -> str:
    if x is None:
        return "no crossing"
    lo = "open" if x["lo"] is None else f"{x['lo']:.3g}"
    hi = "open" if x["hi"] is None else f"{x['hi']:.3g}"
    return f"{x['est']:.3g} [{lo}, {hi}]"


def cell_table(f: dict) -> pd.DataFrame:
    """The answer's table: a few words a cell, in four columns."""
    rows = []
    for c in f["cells"]:
        fix = c["fix"]
        matters = "not measured" if fix is None else (
            f"{ANSWERS.get(fix['answer'], fix['answer'])}: {signed(fix['delta'])} AUC at d_k {fix['d_k']}"
            + (f" ({c['unscaled_bpc']:.3g} → {c['scaled_bpc']:.3g} bits/char)" if c["text"] else ""))
        rows.append({"cell": c["name"], "scaling matters?": matters,
                     "additive alike at small d_k? (TOST by d_k)": _alike_words(c),
                     "d* (additive overtakes unscaled)": _interval(c["d_star"])})
    return pd.DataFrame(rows)


def render(sections, clauses: pd.DataFrame | None = None, report_link: str = "REPORT.md") -> str:
    """ANSWER.md: the answer's lines and table; '' where there is no per-cell verdict."""
    f = facts(sections, clauses)
    if f is None or not f["cells"]:
        return ""
    return environment(TEMPLATES).get_template("answer.md.j2").render(
        f=f, table=cell_table(f), report=report_link)


def render_html(sections) -> str:
    """The same answer for the dashboard's first screen, its prose from the same template
    (answer_prose.md.j2) a paragraph at a time ('' where there is no per-cell verdict)."""
    f = facts(sections)
    if f is None or not f["cells"]:
        return ""
    prose = environment(TEMPLATES).get_template("answer_prose.md.j2").render(f=f)
    paragraphs = "".join(f"<p>{inline_html(p.strip())}</p>\n" for p in prose.split("\n\n") if p.strip())
    return paragraphs + cell_table(f).to_html(index=False, border=0, classes="ql", escape=True)
