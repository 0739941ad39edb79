"""Sub-claim 5 (cost) in words, written from verdicts.cost's reading."""

from __future__ import annotations

from experiments.analysis.render.markdown import section_text
from experiments.analysis.render.section_words import SectionWords, frame
from experiments.analysis.verdicts.cost import COST_FACTOR
from experiments.analysis.verdicts.section import Section


def _ratio(x) -> str:
    return f"{x:.2f}"


COLUMNS = [("mode", "mode", str), ("d_k", "d_k", int), ("n", "n", int), ("time", "time additive/scaled", _ratio),
           ("memory", "temp memory additive/scaled", _ratio), ("predicted_memory", "predicted memory ratio", _ratio),
           ("reference_time", "time reference/scaled", _ratio)]


def _reason(s: Section) -> str:
    """Each d_k at the largest n with the rule's answer, and the settings additive was skipped in."""
    r = s.detail
    lines = [f"d_k={t.d_k}, n={t.n}: time ×{t.time_ratio:.2f} (additive's fastest repeat / scaled's slowest "
             f"×{t.fastest_over_slowest:.2f}), memory ×{t.memory_ratio:.2f}: {t.answer.value}" for t in r.at_largest_n]
    if r.skipped:
        lines.append(f"additive skipped in {r.skipped} settings (e.g. {r.skipped_note})")
    return "; ".join(lines)


def _headline(s: Section) -> str:
    return "additive/scaled time / memory at the largest n, " + ", ".join(
        f"d_k={t.d_k}: ×{t.time_ratio:.1f} / ×{t.memory_ratio:.1f}" for t in s.detail.at_largest_n)


WORDS = SectionWords(
    **section_text("cost", factor=COST_FACTOR),
    reason=_reason,
    headline=_headline,
    tables=lambda s: [(f"Ratios over scaled ({s.detail.mode})", frame(s.tables[0], COLUMNS))])
