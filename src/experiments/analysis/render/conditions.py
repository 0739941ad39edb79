"""The conditions of the report's sections, stated once: what they share at the top, what differs
in each section.

A section's conditions are '; '-separated parts (verdicts.section.describe_runs,
init_source). Two kinds are shared: the config every training run has in
common (one value, in every run of summary.parquet), and a whole description
that several sections read alike (the init-time probe of 1, 2 and 3a). The
top states both once; a section keeps only its parts that are neither.
"""

from __future__ import annotations

from dataclasses import dataclass

from experiments.analysis.tables import load
from experiments.analysis.verdicts.section import Section, constant_config

SEP = "; "


@dataclass(frozen=True)
class Conditions:
    training: list[str]  # config parts every training run shares
    shared: list[tuple[list[str], str]]  # (section numbers, the description they share)
    own: dict[str, str]  # section key -> what is left of its conditions ("" if nothing)


def number(s: Section) -> str:
    """'3a' of '3a. Small gradients: ...'."""
    return s.title.split(".", 1)[0]


def split(res: load.Results, sections: list[Section]) -> Conditions:
    training = []
    if res.summary is not None:
        complete = res.summary.dropna(axis=1, how="any")  # a column some runs lack is not shared by all
        training = constant_config(complete, res.summary)
    alike: dict[str, list[Section]] = {}
    for s in sections:
        alike.setdefault(s.conditions, []).append(s)
    drop = set(training)
    def beyond(text: str) -> str:
        return SEP.join(p for p in text.split(SEP) if p not in drop)
    shared_texts = {text for text, group in alike.items() if len(group) > 1 and text != "not measured"}
    shared = [([number(s) for s in alike[text]], beyond(text)) for text in alike if text in shared_texts]
    own = {s.key: "" if s.conditions in shared_texts else beyond(s.conditions) for s in sections}
    return Conditions(training, shared, own)


def top_lines(c: Conditions) -> list[str]:
    """Markdown bullets of what the sections share."""
    lines = []
    if c.training:
        lines.append("- **Every training run** (`summary.parquet`): " + SEP.join(c.training) + ".")
    lines += [f"- **Sections {', '.join(numbers)}**: {text}." for numbers, text in c.shared]
    return lines


def section_line(c: Conditions, s: Section) -> str:
    """The section's conditions beyond those stated at the top; one line per (task, optimizer)."""
    for numbers, _ in c.shared:
        if number(s) in numbers:
            return f"**Conditions.** those of sections {', '.join(numbers)}, stated at the top."
    rest = c.own.get(s.key, s.conditions)
    if not rest:
        return "**Conditions.** those stated at the top."
    common = ""
    if c.training and rest.startswith("task "):
        parts = set(s.conditions.split(SEP))
        unshared = [p for p in c.training if p not in parts]  # its runs differ there, or vary
        common = (" (and those of every training run, at the top" +
                  (f", except {', '.join(unshared)}" if unshared else "") + ")")
    lines = rest.split(SEP + "task ")
    if len(lines) == 1:
        return f"**Conditions.** {rest}{common}."
    return "**Conditions**" + common + ":\n" + "\n".join(
        f"- {'' if i == 0 else 'task '}{line}" for i, line in enumerate(lines))
