"""dashboard.html: one self-contained page (figures as inline SVG data, runs table, filters, verdicts)."""

from __future__ import annotations

import base64
import html
import json
import math
import re

from experiments.analysis.tables import load
from experiments.analysis.figures import style
from experiments.analysis.render.dashboard_js import CSS, JS
from experiments.analysis.figures.catalog import Rendered
from experiments.analysis.verdicts import answer
from experiments.analysis.verdicts.section import Section

RUN_COLUMNS = ["run_id", "attention", "d_k", "seed", "task", "optimizer", "experiment", "status",
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
    if res.summary is None:
        return {"columns": [], "runs": [], "metrics": []}
    cols = [c for c in RUN_COLUMNS if c in res.summary.columns]
    df = res.summary[cols].astype(object).where(res.summary[cols].notna(), None)
    runs = [{c: _plain(v) for c, v in zip(cols, row)} for row in df.itertuples(index=False)]
    return {"columns": cols, "runs": runs, "metrics": [m for m in METRICS if m in cols]}


def _verdict_class(verdict: str) -> str:
    return "v-" + verdict.split()[0]


def verdicts_html(sections: list[Section]) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(s.title)}</td><td class='{_verdict_class(s.verdict)}'>{html.escape(s.verdict)}</td>"
        f"<td>{html.escape(' '.join([s.reason, *s.notes]))}</td><td>{html.escape(s.rule)}</td></tr>" for s in sections)
    return ("<table id='verdicts'><thead><tr><th>sub-claim</th><th>verdict</th><th>measured</th>"
            f"<th>rule</th></tr></thead><tbody>{rows}</tbody></table>")


def figures_html(rendered: list[Rendered], notes: list[str]) -> str:
    parts = []
    for r in rendered:
        data = base64.b64encode(r.files["svg"]).decode("ascii")
        parts.append(f"<figure id='fig-{html.escape(r.name)}'><figcaption>{html.escape(r.title)}"
                     f" <code>{html.escape(r.name)}</code></figcaption>"
                     f"<img alt='{html.escape(r.name)}' src='data:image/svg+xml;base64,{data}'></figure>")
    parts += [f"<p class='note'>{html.escape(n)}</p>" for n in notes]
    return "\n".join(parts)


# --- "The answer" (issue 33): its own block, called at the very top of the page ---------------

def answer_html(sections: list[Section]) -> str:
    """The answer sentences of verdicts.answer as a list ('' where there are none); a cell's
    **name** becomes bold, everything else is escaped."""
    lines = answer.answer_lines(sections)
    if not lines:
        return ""
    items = "".join("<li>" + re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html.escape(line)) + "</li>"
                    for line in lines)
    return f"<section id='answer'><h2>The answer</h2><ul>{items}</ul></section>"


# -------------------------------------------------------------------------------------------

def render(res: load.Results, sections: list[Section], rendered: list[Rendered], notes: list[str]) -> str:
    shown = set() if res.summary is None else set(res.summary["attention"])
    # every variant on the page in its figures' colour (one the registry does not colour included)
    payload = runs_payload(res) | {"colours": style.COLOURS | {v: style.colour(v) for v in sorted(shown)}}
    data = json.dumps(payload, sort_keys=True, allow_nan=False).replace("</", "<\\/")
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
<h1>Scaled dot-product attention: dashboard</h1>
{answer_html(sections)}
<p>Built by <code>python -m experiments.dashboard</code> from the results folder alone. Self-contained: no network.</p>
<h2>Verdicts</h2>
{verdicts_html(sections)}
<h2>Runs</h2>
<div id="filters"></div>
<p id="count"></p>
{chart}
<div id="runs-wrap"><table id="runs"><thead><tr></tr></thead><tbody></tbody></table></div>
<h2>Figures</h2>
{figures_html(rendered, notes)}
<pre id="selftest-result"></pre>
<div id="tip"></div>
<script type="application/json" id="dashboard-data">{data}</script>
<script>{JS}</script>
</body></html>
"""
