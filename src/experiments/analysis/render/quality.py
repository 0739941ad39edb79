"""Sub-claim 4 in words: the full rule (REPORT.md's folded rule, the dashboard's rules table)
and its one-sentence brief, whose clauses are verdicts.quality_rules; the verdict's reason, the
key number and the notes, written from the section's cells (verdicts.quality.Cell) and reading."""

from __future__ import annotations

from experiments.analysis.lr import select as lr_select
from experiments.analysis.render import quality_robust, quality_tables
from experiments.analysis.render.clauses import INTERVALS, d_k_list, part_text
from experiments.analysis.render.markdown import say
from experiments.analysis.render.section_words import SectionWords
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts import quality_rules, top_up
from experiments.analysis.verdicts.quality import Cell
from experiments.analysis.verdicts.rules import FAILS, HOLDS, Verdict, words
from experiments.analysis.verdicts.section import Section

CLAIM = ("For small d_k additive and dot-product perform alike; for large d_k additive beats unscaled "
         "dot-product.")
OUT = {qp.NOT_LEARNED: "scaled did not learn there", qp.NEVER_RUN: "scaled was never run there"}

RULE = say("quality_rule.md.j2", intervals=INTERVALS, alpha=f"{quality_rules.ALPHA:g}",
           lr_over_chance=f"{lr_select.LEARNED_OVER_CHANCE:g}")
RULE_BRIEF = say("quality_rule_brief.md.j2")


def gate_words(gate: qp.Gate | None) -> str:
    if gate is None:
        return "no scaled runs: every d_k enters"
    return (f"scaled learned: seed-mean AUC ≥ {gate.bar:.3f} (chance {gate.chance:.3f} + {gate.fraction:.0%} of "
            f"the way to its best, {gate.top:.3f})")


def lr_words(c: Cell) -> str:
    """The lr view's verdict in words: 'not measured (no mup runs)' where no mup runs."""
    return words(c.lr_verdict, c.lr_seeds) + ("" if "mup" in c.lr_parts else " (no mup runs)")


def tally(named: dict[str, tuple[Verdict, str]]) -> str:
    """'holds on 2 of 3: a/x, b/y; does not hold on c/z' — every condition named under its verdict
    (named: {condition: (verdict, its words)})."""
    groups: dict[tuple[Verdict, str], list[str]] = {}
    for name, verdict in named.items():
        groups.setdefault(verdict, []).append(name)
    order = sorted(groups, key=lambda v: (v[0] is not HOLDS, v[0] is not FAILS, v[1]))
    return "; ".join(f"{v[1]} on {len(groups[v])} of {len(named)}: {', '.join(groups[v])}" for v in order)


def _crossing(c: Cell) -> str:
    if c.crossover is None:
        return ""
    both = quality_robust.crossing_words(c.crossing) if c.crossover.d_star is not None else ""
    return f"(a) crossover d* = {c.crossover.text()}" + (f" ({both})" if both else "") + "; "


def _robust(c: Cell) -> str:
    """The alike clause's power at the observed Δ, and where t and sign-flip disagree."""
    alike = next((p.label for p in c.parts if isinstance(p.question, quality_rules.Equivalent)), "")
    found = [quality_robust.tost_power_words(c.checks, alike), quality_robust.disagreements(c.checks)]
    return "".join(f"; {x}" for x in found if x)


def cell_line(c: Cell) -> str:
    """'task/opt: verdict, flips (…) ((a) crossover d* = …; clause; …)': one condition's clauses."""
    gaps = "".join(f"; not measured at {d_k_list(d_ks)} ({OUT[why]})"
                   for why, d_ks in c.dk_profile.why_unmeasured().items())
    diverged = f"; {c.diverged} diverged runs left out" if c.diverged else ""
    flips = f", {quality_robust.flip_words(c.sensitivity)}" if c.sensitivity else ""
    return (f"{c.name}: {words(c.verdict, c.seeds)}{flips} ({_crossing(c)}" + "; ".join(part_text(p) for p in c.parts)
            + _robust(c) + gaps + diverged + ")")


def reason(s: Section) -> str:
    views = {c.name: (c.lr_verdict, lr_words(c)) for c in s.cells if c.lr_verdict is not None}
    judged = {c.name: (c.verdict, words(c.verdict, c.seeds)) for c in s.cells}
    view_words = tally(views) if views else lr_select.NO_GRID
    return f"(a)+(b) {tally(judged)}. (c) lr view: {view_words}. " + "; ".join(cell_line(c) for c in s.cells)


def _lr_view_note(c: Cell) -> str:
    step, band = c.lr_grid
    clauses = "; ".join(part_text(p) for p in c.lr_parts.values())
    grid = f"grid step {step:.2f} in log2 lr, i.e. ±{band:.2f} per doubling over the sweep is half a step"
    return f"{c.name}, lr view (c): {lr_words(c)} ({clauses}; {grid})"


def _span(seeds) -> str:
    seeds = list(seeds)
    if not seeds:
        return "none"
    return f"{seeds[0]}–{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) else ", ".join(map(str, seeds))


def phase_line(ph: qp.Phases) -> str:
    """Which seeds chose one condition's rates and which were judged."""
    head = f"{ph.name}: rates chosen on seeds {_span(ph.chose)}; "
    if not ph.n_fresh:
        return head + "no confirmation seeds yet: judged on the seeds that chose the rates"
    return (head + f"judged on confirmation seeds {_span(ph.judged)} in {ph.n_fresh} of {ph.n_cells} (variant, d_k)"
            + ("" if ph.n_fresh == ph.n_cells else ", the others on the seeds that chose the rates"))


LOOKS = {1: "the first look (selection and stage-1 seeds)", 2: "the second look (all its seeds)"}


def looks_note(c: Cell) -> str:
    """Which look judged each clause of a two-stage cell (verdicts.top_up)."""
    return (f"{c.name}: two-stage confirmation (conf/analysis.yaml two_stage), each clause at the look that "
            "decided it: " + "; ".join(f"{p.label} at {LOOKS[k]}, n = {p.n}" for p, k in zip(c.parts, c.looks)))


def top_up_words(u: top_up.TopUp) -> str:
    """One undecided clause's comparison after stage 1: what it read, the test sized, the seeds
    and the power there at the observed Δ (TOST: and if truly equal)."""
    head = f"{u.clause} at d_k {u.d_k} ({u.pair[0]} − {u.pair[1]}): Δ {u.delta:+.3f}, sd {u.sd:.3f} over {u.n} seeds"
    if u.unreached is not None:
        return f"{head}; no seeds added: {u.unreached.value}"
    at_zero = f", {u.power_if_equal:.2f} if truly equal" if u.power_if_equal is not None else ""
    needed = f"capped, {u.needed} needed" if u.capped else f"{u.needed} needed"
    return f"{head}; {u.test.value} sized: {u.seeds} seeds ({needed}), power {u.power:.2f} at the observed Δ{at_zero}"


def top_ups_note(c: Cell) -> str:
    """The seeds stage 2 added to a two-stage cell, clause by clause."""
    d = c.stage.design
    head = (f"{c.name}: stage 2 (power {d.power:.0%} at the observed Δ and sd, α {d.alphas[1]}, at most "
            f"{d.max_seeds} seeds per (variant, d_k)): ")
    return head + ("; ".join(top_up_words(u) for u in c.stage.top_ups) or "every clause decided at the first look")


def notes(s: Section) -> list[str]:
    out = []
    for c in s.cells:
        out.append(f"{c.name}: d_k entered where {gate_words(c.dk_profile.gate)}")
        if c.looks:
            out += [top_ups_note(c), looks_note(c)]
        if c.lr_verdict is not None:
            out.append(_lr_view_note(c))
    edges = s.detail.edges
    if edges:
        out.append("best lr at a grid edge: " + ", ".join(f"{e.task}/{e.optimizer} {e.variant} d_k={e.d_k} "
                                                          f"({e.edge})" for e in edges))
    out += [phase_line(ph) for ph in s.detail.phases]
    return out + ([] if s.detail.has_grid else [f"lr views: {lr_select.NO_GRID}"])


def headline(s: Section) -> str:
    """The AUC of scaled, unscaled and additive at the largest d_k of the primary condition."""
    rows = next(t.rows for t in s.tables if t.kind == "quality")
    primary = s.detail.primary
    at = [r for r in rows if (r["task"], r["optimizer"]) == tuple(primary or ())] or rows
    if not at:
        return "not measured"
    r = max(at, key=lambda r: r["d_k"])
    auc = {v: quality_tables.mean_text(x) for v, x in r["auc"].items()}
    return (f"accuracy AUC at d_k={r['d_k']} ({r['task']}, {r['optimizer']}): scaled {auc['scaled']}, "
            f"unscaled {auc['unscaled']}, additive {auc['additive']}")


WORDS = SectionWords(CLAIM, RULE, RULE_BRIEF, reason, headline, quality_tables.tables, notes)
