"""Sub-claim 5 (cost) in words, written from verdicts.cost's reading."""

from __future__ import annotations

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
    claim=("Dot-product is much faster and more space-efficient in practice than additive attention, which "
           "materialises an [n_q, n_k, d_hidden] tensor."),
    rule=(f"At the largest n where both are measured, per d_k (forward+backward when measured): a d_k "
          f"agrees if additive/scaled time ratio ≥ {COST_FACTOR} with additive's fastest repeat slower "
          f"than scaled's slowest, and memory ratio (XLA's compiled temp bytes) ≥ {COST_FACTOR}; it "
          "disagrees if either ratio ≤ 1. Holds if every d_k agrees, does not hold if every d_k "
          "disagrees, inconclusive otherwise. Power: timings are repeats of one benchmark, not seeds; "
          "the spread of the repeats (fastest against slowest) stands in for it."),
    brief=(f"At the largest n, additive takes at least {COST_FACTOR}× scaled's time and memory at every "
           "d_k measured."),
    reason=_reason,
    headline=_headline,
    tables=lambda s: [(f"Ratios over scaled ({s.detail.mode})", frame(s.tables[0], COLUMNS))])
