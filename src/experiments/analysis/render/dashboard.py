"""dashboard.html: one page whose first screen is the answer.

Top to bottom: the answer block (its plain sentences, when given), the quick
look (a folder with too few seeds for a verdict), then the answer's figure
beside one line per sub-claim (its verdict and key number), the rules folded
in <details>; below the fold the runs (filters, chart, table) and every
figure. Figures are linked from figures/ beside the page where plot drew them there, inline SVG
data otherwise: no network, opens from file://.
"""

from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path

from experiments.analysis.lr import select as lr_select
from experiments.analysis.tables import load
from experiments.analysis.figures import style
from experiments.analysis.render import clause_view
from experiments.analysis.render import every_variant as ev
from experiments.analysis.render import quick_look
from experiments.analysis.render import transfer
from experiments.analysis.figures.catalog import Rendered
from experiments.analysis.render import short_answer
from experiments.analysis.render.markdown import inline_html
from experiments.analysis.render.answer import answer_lines
from experiments.analysis.render.words import CSS_CLASS, headline, notes, reason, rule, verdict_words
from experiments.analysis.verdicts.section import Section

# the page's stylesheet and script, files beside the templates, inlined (no CDN: it opens from file://)
_STATIC = Path(__file__).with_name("templates")
CSS, JS = ("\n" + (_STATIC / name).read_text() for name in ("dashboard.css", "dashboard.js"))

RUN_COLUMNS = ["run_id", "attention", "d_k", "seed", "task", "optimizer", "lr", "experiment", "status",
               "diverged_at_step", "test_accuracy", "final_val_accuracy", "steps_to_threshold", "accuracy_auc",
               "wall_time_s", "compile_time_s", "steps_per_s", "steps", "threshold"]
METRICS = ["accuracy_auc", "test_accuracy", "final_val_accuracy", "steps_to_threshold",
           "wall_time_s", "steps_per_s"]

# Captures script errors before anything else runs, for the self-test (#selftest).
ERROR_HOOK = ("window.__dashboardErrors=[];window.addEventListener('error',function(e){"
              "window.__dashboardErrors.push(String(e.message||e));});")


def _plain(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x.item() if hasattr(x, "item") else x


def runs_payload(res: load.Results) -> dict:
    """The runs explorer's data: the runs, their columns and metrics, and the conditions
    (task, optimizer) it shows one at a time, the primary one first. A run's `at_best`: it is
    one the figures draw (its cell at its best lr, lr.select.at_best). Beyond INLINE_RUNS runs
    only those at their chosen rate are inline; `left_out` counts the others, which
    summary.parquet holds."""
    if res.summary is None:
        return {"columns": [], "runs": [], "metrics": [], "conditions": [], "left_out": 0}
    cols = [c for c in RUN_COLUMNS if c in res.summary.columns]
    best = set(lr_select.at_best(res.summary, res.history)["run_id"])
    summary = res.summary
    if len(summary) > INLINE_RUNS:
        summary = summary[summary["run_id"].isin(best)]
    df = summary[cols].astype(object).where(summary[cols].notna(), None)
    runs = [{c: _plain(v) for c, v in zip(cols, row)} | {"at_best": row.run_id in best}
            for row in df.itertuples(index=False)]
    conds = load.conditions(res.summary)
    first = [res.primary] if res.primary in conds else []  # no history: most runs first
    return {"columns": cols, "runs": runs, "metrics": [m for m in METRICS if m in cols],
            "conditions": [list(c) for c in first + [c for c in conds if c not in first]],
            "left_out": len(res.summary) - len(summary)}


INLINE_RUNS = 3000  # a page with more runs carries those at their chosen rate: it opens at once


# The figure that answers the question, first found: the d_k profile, else the quality sweep.
ANSWER_FIGURES = ("profile", "quality")


def verdict_lines(sections: list[Section]) -> str:
    """One line per sub-claim: its title, its verdict and its key number."""
    items = "".join(
        f"<li><span class='claim'>{html.escape(s.title)}</span> "
        f"<span class='verdict {CSS_CLASS[s.verdict]}'>{html.escape(verdict_words(s))}</span>"
        f"<br><span class='key'>{html.escape(headline(s) or _clip(reason(s)))}</span></li>" for s in sections)
    return f"<ul id='verdict-lines'>{items}</ul>"


def _clip(text: str, limit: int = 160) -> str:
    """A section without a headline shows the start of its reason, on a line or two."""
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def rules_html(sections: list[Section]) -> str:
    """Each sub-claim's rule and the clauses it measured, folded."""
    rows = "".join(
        f"<tr><td>{html.escape(s.title)}</td><td class='{CSS_CLASS[s.verdict]}'>{html.escape(verdict_words(s))}</td>"
        f"<td>{html.escape(' '.join([reason(s), *notes(s)]))}</td><td>{html.escape(rule(s))}</td></tr>" for s in sections)
    return ("<details id='rules'><summary>How each verdict is decided: the rules and the measured clauses"
            "</summary><table id='verdicts'><colgroup><col style='width:14%'><col style='width:10%'>"
            "<col style='width:38%'><col style='width:38%'></colgroup><thead><tr><th>sub-claim</th>"
            f"<th>verdict</th><th>measured</th><th>rule</th></tr></thead><tbody>{rows}</tbody></table></details>")


def answer_figure(rendered: list[Rendered]) -> Rendered | None:
    for key in ANSWER_FIGURES:
        for r in rendered:
            if r.name == key or r.name.startswith(key + "_"):
                return r
    return None


def figure_html(r: Rendered, element_id: str, root: Path | None = None) -> str:
    """A figure: linked from figures/ beside the page where plot drew it there (the page stays
    light and still opens from file://), else inline."""
    png = f"figures/{r.name}.png"
    if root is not None and (Path(root) / png).is_file():
        src, lazy = html.escape(png), " loading='lazy'"
    else:
        src, lazy = "data:image/svg+xml;base64," + base64.b64encode(r.files["svg"]).decode("ascii"), ""
    return (f"<figure id='{html.escape(element_id)}'><figcaption>{html.escape(r.title)}"
            f" <small>({html.escape(png)})</small></figcaption>"  # the file, apart from the title
            f"<img alt='{html.escape(r.name)}'{lazy} src='{src}'></figure>")


def figures_html(rendered: list[Rendered], notes: list[str], root: Path | None = None) -> str:
    parts = [figure_html(r, f"fig-{r.name}", root) for r in rendered]
    parts += [f"<p class='note'>{html.escape(n)}</p>" for n in notes]
    return "\n".join(parts)


def quick_look_html(res: load.Results) -> str:
    """The quick look's tables, for a folder with too few seeds for a verdict; else nothing."""
    if not quick_look.wanted(res):
        return ""
    tables = "".join("<div class='ql-cond'>" + "".join(
        f"<div><p class='caption'>{html.escape(caption)}</p>{table.to_html(index=False, border=0, classes='ql')}</div>"
        for caption, table in metrics) + "</div>" for _, metrics in quick_look.tables(res))
    return (f"<section id='quick-look'><h2>Quick look</h2><p>{html.escape(quick_look.heading(res))}</p>"
            f"<div class='ql-tables'>{tables}</div></section>")


def every_variant_html(sections: list[Section]) -> str:
    """Every variant's quality rows (render.every_variant), one folded table per condition; ''
    where no section carries them."""
    conds = ev.cells(sections)
    if not conds:
        return ""
    blocks = "".join(
        f"<details><summary>{html.escape(c.task)}, {html.escape(c.optimizer)}</summary><p class='caption'>"
        f"{html.escape(ev.caption(c))}</p>{ev.table(c).to_html(index=False, border=0, classes='ql')}"
        + "".join(f"<p class='note'>{html.escape(n)}</p>" for n in ev.notes(c)) + "</details>" for c in conds)
    return f"<section id='every-variant'><h2>{ev.TITLE}</h2><p>{html.escape(ev.INTRO)}</p>{blocks}</section>"


def answer_html(sections: list[Section]) -> str:
    """The answer sentences of render.answer as a list ('' where there are none), then whether they
    hold on text (render.transfer: its sentence, and its table where a text cell was run); a cell's
    **name** becomes bold, everything else is escaped."""
    lines = answer_lines(sections)
    if not lines:
        return ""
    side = transfer.of(sections)
    lines += [transfer.sentence(side)] if side else []
    items = "".join(f"<li>{inline_html(line)}</li>" for line in lines)
    table = transfer.table(side) if side else None
    beside = ("" if table is None else f"<div id='side-by-side'><p class='caption'><em>{transfer.TITLE}.</em> "
              f"{html.escape(transfer.CAPTION)}</p>{table.to_html(index=False, border=0, classes='ql')}</div>")
    return (f"<h2>The answer</h2>{short_answer.render_html(sections)}<details id='answer-in-full'><summary>"
            f"Each cell's answer in full, and on text beside the toy tasks</summary><ul>{items}</ul>{beside}</details>")


def first_screen(res: load.Results, sections: list[Section], rendered: list[Rendered], answer: str = "") -> str:
    """The answer block (HTML, from render.answer), the quick look (when too few seeds), the
    answer's figure beside the verdict lines, the rules folded."""
    top = answer_figure(rendered)
    figure = figure_html(top, "answer-figure", res.root) if top else "<p id='answer-figure'>no figure of the answer drawn</p>"
    return (f"<section id='answer'>{answer}</section>" if answer else "") + quick_look_html(res) + (
        f"<div id='first-screen'>{figure}<section id='verdicts-box'><h2>Sub-claims</h2>{verdict_lines(sections)}"
        "<p class='note'>Each line: the verdict, then the key number (seed means; intervals and clauses "
        f"in the rules below and in REPORT.md).</p></section></div>{rules_html(sections)}")


# inside <script>, "</script" and "<!--<script" change how the HTML parser reads on; JSON's own
# \u escapes keep every character the same value while none of these is left as written
_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def left_out_html(payload: dict) -> str:
    n = payload.get("left_out", 0)
    return (f"<p class='note' id='left-out'>The {n} runs at rates other than their chosen one are not on this page: "
            "<code>summary.parquet</code> holds every run.</p>" if n else "")


def script_json(payload) -> str:
    """`payload` as JSON text that is safe inside a <script> element, whatever its strings hold."""
    text = json.dumps(payload, sort_keys=True, allow_nan=False)
    return text.translate(str.maketrans(_SCRIPT_UNSAFE))


def render(res: load.Results, sections: list[Section], rendered: list[Rendered], notes: list[str],
           answer: str | None = None, clauses=None) -> str:
    """The page; `answer` is the answer block's HTML, by default the sections' own (answer_html);
    `clauses` the clause table (render.clause_table), drawn sortable and filterable below the runs."""
    if answer is None:  # a folder with too few seeds opens with the quick look instead
        answer = "" if quick_look.wanted(res) else answer_html(sections)
    shown = set() if res.summary is None else set(res.summary["attention"])
    # every variant on the page in its figures' colour (one the registry does not colour included)
    payload = runs_payload(res) | {"colours": style.COLOURS | {v: style.colour(v) for v in sorted(shown)}}
    data = script_json(payload)
    chart = ("<p><label>metric <select id='metric'></select></label> — one point per run (hover for "
             "details), line: mean over the completed seeds; ×: a diverged run (left out of the line).</p><svg id='chart' width='720' height='360' "
             "viewBox='0 0 720 360' role='img' aria-label='metric vs d_k'></svg>")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Attention scaling — dashboard</title>
<style>{CSS}</style>
<script>{ERROR_HOOK}</script>
</head><body>
<header><h1>Scaled dot-product attention: does dividing by √d_k matter?</h1>
<span class="sub">Built by <code>python -m experiments.dashboard</code> from the results folder alone; self-contained.</span></header>
{first_screen(res, sections, rendered, answer)}
{every_variant_html(sections)}
<h2>Runs</h2>
<div id="filters"></div>
<p id="count"></p>{left_out_html(payload)}
{chart}
<div id="runs-wrap"><table id="runs"><thead><tr></tr></thead><tbody></tbody></table></div>
{clause_view.html(clauses, script_json)}
<h2>Figures</h2>
{figures_html([r for r in rendered if r is not answer_figure(rendered)], notes, res.root)}
<pre id="selftest-result"></pre>
<div id="tip"></div>
<script type="application/json" id="dashboard-data">{data}</script>
<script>{JS}</script>
</body></html>
"""
