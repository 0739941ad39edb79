"""REPORT.md: one section per sub-claim, each with figure, table, rule, verdict and conditions."""

from __future__ import annotations

import pandas as pd

from experiments.analysis.tables import load
from experiments.analysis.lr import select as lr_select
from experiments.analysis.tables import diverged as status
from experiments.analysis.verdicts import answer
from experiments.analysis.verdicts.section import INTERVALS, Section

FIGURE_NEEDS = {  # figure stem -> the table it is drawn from (the link is written when that exists)
    "logit_variance": ("history", "probe"), "entropy": ("history", "probe"),
    "saturation": ("history", "probe"), "gradients": ("history", "probe"), "quality": ("summary",),
    "learning_curves": ("history",), "steps_survival": ("summary",), "cost": ("cost",),
    "logit_growth": ("history",), "lr_accuracy": ("summary",), "optimal_lr": ("summary",),
    "lr_sensitivity": ("summary",), "profile": ("summary",),
}
PER_CONDITION = {"learning_curves": ("history", "learning curves"), "steps_survival": ("summary", "steps survival"),
                 "lr_accuracy": ("summary", "accuracy vs lr")}
LR_FIGURES = {"lr_accuracy", "optimal_lr", "lr_sensitivity"}  # drawn only where a cell has an lr grid


def md_table(df: pd.DataFrame) -> str:
    if df is None or df.empty:
        return "_no rows_"
    cell = lambda x: str(x).replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(cell(c) for c in df.columns) + " |",
             "|" + "|".join("---" for _ in df.columns) + "|"]
    lines += ["| " + " | ".join(cell(x) for x in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


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


def section_md(res: load.Results, s: Section) -> str:
    parts = [f"## {s.title}", f"**Claim.** {s.claim}", *figure_links(res, s.figures)]
    for caption, table in s.tables:
        parts += [f"*{caption}*", md_table(table)]
    parts += [f"**Rule.** {s.rule}",
              f"**Verdict: {s.verdict}.** {s.reason}"]
    if s.notes:
        parts.append("\n".join(f"- {n}" for n in s.notes))
    parts.append(f"**Conditions.** {s.conditions}")
    return "\n\n".join(parts)


def answer_md(res: load.Results, sections: list[Section]) -> list[str]:
    """"## The answer": per (task, optimizer), the plain sentences of verdicts.answer, and the
    profile figure; nothing where no section carries an answer."""
    lines = answer.answer_lines(sections)
    if not lines:
        return []
    return ["## The answer", "\n".join(f"- {line}" for line in lines), *figure_links(res, ["profile"])]


def render(res: load.Results, sections: list[Section]) -> str:
    summary = pd.DataFrame([{"sub-claim": s.title, "verdict": s.verdict} for s in sections])
    head = [
        "# Scaled dot-product attention: what the data say",
        *answer_md(res, sections),
        "Vaswani et al. 2017, sec. 3.2.1, put under measurement (see docs/CLAIM.md). Written by "
        "`python -m experiments.report` from the results folder alone; every verdict below is computed "
        f"from the tables by the rule stated beside it. Intervals: {INTERVALS}. Figures: "
        "`python -m experiments.plot`.",
        primary_md(res),
        md_table(summary),
    ]
    missing = [f"`{t}.parquet`" for t in ("summary", "history", "probe", "cost") if getattr(res, t) is None]
    if missing:
        head.append("Missing from this results folder: " + ", ".join(missing) + ".")
    head += runs_md(res)
    return "\n\n".join(head + [section_md(res, s) for s in sections]) + "\n"


def primary_md(res: load.Results) -> str:
    if res.primary is None:
        return "**Primary condition.** none (no history.parquet)."
    return (f"**Primary condition** (conf/analysis.yaml: primary_optimizer, primary_task): task "
            f"`{res.primary[0]}`, optimizer `{res.primary[1]}`: the d_k-sweep figures at init and at the "
            "end of training, and sub-claim 6, are read there.")


def runs_md(res: load.Results) -> list[str]:
    """How many runs there are by status, and every diverged run with its step."""
    if res.summary is None or "status" not in res.summary:
        return []
    counts = res.summary["status"].value_counts()
    line = (f"**Runs.** {len(res.summary)} in `summary.parquet`: "
            + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + ".")
    broken = status.table(res.summary)
    if broken.empty:
        return [line]
    return [line + " A diverged run (non-finite loss or gradient) is left out of every mean, interval "
            "and verdict after initialisation and counted in the tables instead; figures mark it with ×.",
            f"*Diverged runs ({len(broken)})*", md_table(broken)]
