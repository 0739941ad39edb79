"""REPORT.md: the answer and one line per sub-claim first, the common conditions once, then one
section per sub-claim (figure, tables, its rule in a sentence, verdict, what differs in its conditions).

A folder with too few seeds for a verdict opens with the quick look instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from experiments.analysis.tables import load
from experiments.analysis.lr import select as lr_select
from experiments.analysis.tables import diverged
from experiments.analysis.render import conditions as conds
from experiments.analysis.render import controls as controls_words
from experiments.analysis.render import every_variant as ev
from experiments.analysis.render import quick_look
from experiments.analysis.render import transfer
from experiments.analysis.render.answer import answer_lines
from experiments.analysis.render.clauses import INTERVALS
from experiments.analysis.render import short_answer
from experiments.analysis.render.markdown import MAX_ROWS, TABLES, Pages, table as md_table
from experiments.analysis.render.words import claim, headline, notes, reason, rule, rule_brief, tables, verdict_words
from experiments.analysis.verdicts import controls as controls_reading
from experiments.analysis.verdicts.section import Section

FIGURE_NEEDS = {  # figure stem -> the table it is drawn from (the link is written when that exists)
    "logit_variance": ("history", "probe"), "entropy": ("history", "probe"),
    "saturation": ("history", "probe"), "gradients": ("history", "probe"), "quality": ("summary",),
    "learning_curves": ("history",), "steps_survival": ("summary",), "cost": ("cost",),
    "logit_growth": ("history",), "lr_accuracy": ("summary",), "optimal_lr": ("summary",),
    "lr_sensitivity": ("summary",), "profile": ("summary",), "largest_logit": ("history",),
    "mechanism": ("history",),
    "margin_sensitivity": ("summary",),
}
PER_CONDITION = {"learning_curves": ("history", "learning curves"), "steps_survival": ("summary", "steps survival"),
                 "lr_accuracy": ("summary", "accuracy vs lr"), "largest_logit": ("history", "largest attention logit")}
LR_FIGURES = {"lr_accuracy", "optimal_lr", "lr_sensitivity"}  # drawn only where a cell has an lr grid
CLAIM = Path(__file__).resolve().parents[4] / "docs" / "CLAIM.md"
CLAIM_ANCHORS = {"variance": "1-variance-of-the-logits", "saturation": "2-saturation",
                 "jacobian": "3-small-gradients", "gradients": "3-small-gradients", "quality": "4-quality",
                 "cost": "5-cost", "extra": "6-beyond-the-paper-mups-1d"}


def figure_links(res: load.Results, stems: list[str]) -> list[str]:
    links = []
    for stem in stems:
        if not any(getattr(res, t) is not None for t in FIGURE_NEEDS[stem]):
            links.append(f"_figure `{stem}` not drawn: its data are missing._")
        elif stem in LR_FIGURES and not lr_select.has_grid(res.summary):
            links.append(f"_figure `{stem}` not drawn: {lr_select.NO_GRID}._")
        elif stem in PER_CONDITION:
            from experiments.analysis.figures.train import slug
            table, words = PER_CONDITION[stem]
            for task, opt in load.conditions(getattr(res, table).drop_duplicates("run_id")):
                if stem in LR_FIGURES and not lr_select.has_grid(load.at_condition(res.summary, (task, opt))):
                    continue
                links.append(f"![{words}, {task}, {opt}](figures/{stem}_{slug(task)}_{slug(opt)}.png)")
        else:
            links.append(f"![{stem.replace('_', ' ')}](figures/{stem}.png)")
    return links


def claim_link(root: Path, key: str) -> str:
    """docs/CLAIM.md, linked relative to the report where the results folder is in the repository."""
    try:
        rel = Path(os.path.relpath(CLAIM, Path(root).resolve()))
    except ValueError:  # another drive
        return "docs/CLAIM.md"
    if not CLAIM.exists() or rel.parts[:-2].count("..") != len(rel.parts) - 2:
        return "docs/CLAIM.md"
    return f"[docs/CLAIM.md]({rel.as_posix()}#{CLAIM_ANCHORS.get(key, '')})".replace("#)", ")")


def section_md(res: load.Results, s: Section, c: conds.Conditions, pages: Pages) -> str:
    parts = [f"## {s.title}", f"**Claim.** {claim(s)}", *figure_links(res, s.figures)]
    for caption, table in tables(s):
        parts.append(pages.block(caption, table))
    parts += [f"**Rule.** {rule_brief(s) or rule(s)} The full rule: {claim_link(res.root, s.key)}, and below.",
              "<details><summary>The rule as computed</summary>\n\n"
              + rule(s).replace(INTERVALS, "the intervals of the common conditions") + "\n\n</details>",
              f"**Verdict: {verdict_words(s)}.** {reason(s)}"]
    if notes(s):
        parts.append("\n".join(f"- {n}" for n in notes(s)))
    parts.append(conds.section_line(c, s))
    return "\n\n".join(parts)


def every_variant_md(s: Section, pages: Pages) -> list[str]:
    """"## Every variant" after the section that carries it (quality): a table per condition."""
    if not s.variants:
        return []
    parts = [f"## {ev.TITLE}", ev.INTRO]
    for c in s.variants:
        parts.append(pages.block(ev.caption(c), ev.table(c)))
        parts += ["\n".join(f"- {n}" for n in ev.notes(c))] if ev.notes(c) else []
    return ["\n\n".join(parts)]


def verdicts_table(sections: list[Section]) -> str:
    return md_table(pd.DataFrame([{"sub-claim": s.title, "verdict": verdict_words(s), "key number": headline(s) or "—"}
                                  for s in sections]))


def quick_look_md(res: load.Results) -> list[str]:
    if not quick_look.wanted(res):
        return []
    parts = ["## Quick look", quick_look.heading(res)]
    for _, metrics in quick_look.tables(res):
        for caption, table in metrics:
            parts += [f"*{caption}*", md_table(table)]
    return parts


def answer_md(res: load.Results, sections: list[Section], pages: Pages, clauses=None) -> list[str]:
    """"## The answer": the short answer (render.short_answer, ANSWER.md), whether it holds on
    text (render.transfer: its sentence and table where a text cell was run), the profile figure,
    and each cell's answer in full on its own page; nothing where no section carries an answer."""
    lines = answer_lines(sections)
    if not lines or quick_look.wanted(res):  # too few seeds: the quick look opens the report instead
        return []
    side = transfer.of(sections)
    lines += [transfer.sentence(side)] if side else []
    table = transfer.table(side) if side else None
    pages.files[f"{TABLES}/answer-by-cell.md"] = ("*Each cell's answer in full*\n\n[back to REPORT.md](../REPORT.md)\n\n"
                                                 + "\n".join(f"- {line}" for line in lines) + "\n")
    return ["## The answer", short_answer.render(sections, clauses, report_link="#4-quality").strip(),
            *([f"*{transfer.TITLE}.* {transfer.CAPTION}", md_table(table)] if table is not None else []),
            *figure_links(res, ["profile"]),
            f"Each cell's answer in full: [{TABLES}/answer-by-cell.md]({TABLES}/answer-by-cell.md)."]


def render(res: load.Results, sections: list[Section], answer: str | None = None) -> str:
    """The report; `answer` is the answer block's markdown, by default the sections' own (answer_md)."""
    return render_pages(res, sections, answer)[0]


def render_pages(res: load.Results, sections: list[Section], answer: str | None = None,
                 clauses=None) -> tuple[str, dict[str, str]]:
    """The report and the pages it links ({path under the folder: text}: its long tables);
    `clauses`: the sections' clause table where the caller has it (render.clause_table)."""
    pages = Pages()
    c = conds.split(res, sections)
    head = [
        "# Scaled dot-product attention: what the data say",
        "Vaswani et al. 2017, sec. 3.2.1, put under measurement (docs/CLAIM.md). Written by "
        "`python -m experiments.report` from the results folder alone; each verdict is computed from the "
        "tables by the rule its section states. Figures: `python -m experiments.plot`.",
        *(answer_md(res, sections, pages, clauses) if answer is None else [answer] if answer else []),
        *quick_look_md(res),
        verdicts_table(sections),
        "## Common conditions",
        "\n".join([f"- **Intervals.** {INTERVALS}.", f"- {primary_md(res)}", *conds.top_lines(c),
                    *runs_md(res)]),
    ]
    missing = [f"`{t}.parquet`" for t in ("summary", "history", "probe", "cost") if getattr(res, t) is None]
    if missing:
        head.append("Missing from this results folder: " + ", ".join(missing) + ".")
    body = [md for s in sections for md in (section_md(res, s, c, pages), *every_variant_md(s, pages))]
    cells = [cell for s in sections for cell in s.cells]
    text = "\n\n".join(head + body + controls_md(res, cells, pages) + diverged_md(res, pages)) + "\n"
    return text, pages.files


def controls_md(res: load.Results, cells: list, pages: Pages) -> list[str]:
    """"## Controls" (render.controls): where unscaled_init sits between unscaled and scaled, and
    additive at a fixed hidden width beside the tied additive; with the mechanism figure."""
    parts = [f"## {controls_words.TITLE}", controls_words.INTRO, *figure_links(res, ["mechanism"])]
    for block in controls_words.blocks(controls_reading.of_cells(res, cells)):
        parts.append(pages.block(*block) if isinstance(block, tuple) else block)
    return ["\n\n".join(parts)]


def primary_md(res: load.Results) -> str:
    if res.primary is None:
        return "**Primary condition.** none (no history.parquet)."
    return (f"**Primary condition** (conf/analysis.yaml: primary_optimizer, primary_task): task "
            f"`{res.primary[0]}`, optimizer `{res.primary[1]}`: the d_k-sweep figures at init and at the "
            "end of training, and sub-claim 6, are read there.")


def runs_md(res: load.Results) -> list[str]:
    """How many runs there are by status (a bullet of the common conditions)."""
    if res.summary is None or "status" not in res.summary:
        return []
    counts = res.summary["status"].value_counts()
    width = 0 if res.width_summary is None else len(res.width_summary)
    apart = f" (and {width} of the width setting, read by sub-claim 6 alone)" if width else ""
    line = (f"- **Runs.** {len(res.summary)} fixed-width training runs in `summary.parquet`{apart}: "
            + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + ".")
    if diverged.table(res.summary).empty:
        return [line]
    return [line + " A diverged run (non-finite loss or gradient) is left out of every mean, interval "
            "and verdict after initialisation and counted in the tables instead; figures mark it with ×; "
            "each is listed at the end."]


def diverged_md(res: load.Results, pages: Pages) -> list[str]:
    """The diverged runs at the end of the report: a count by variant and d_k (per cell), every
    run with its step on its own page where they are many."""
    broken = diverged.table(res.summary) if res.summary is not None and "status" in res.summary else None
    if broken is None or broken.empty:
        return []
    parts = [f"## Diverged runs ({len(broken)})"]
    if len(broken) > MAX_ROWS:  # too many to scan: a count first
        by = [c for c in ("task", "optimizer", "attention") if c in broken]
        count = broken.pivot_table(index=by, columns="d_k", values="run_id", aggfunc="size", fill_value=0)
        count.columns = [f"d_k {d}" for d in count.columns]
        parts.append(pages.block("Diverged runs by cell, variant and d_k", count.reset_index()))
    parts.append(pages.block("Every diverged run, with the step it diverged at", broken))
    return ["\n\n".join(parts)]
