"""A section's verdict and rule in words, and the dashboard's class for its verdict (its colour)."""

from __future__ import annotations

from experiments.analysis.render import quality
from experiments.analysis.verdicts.rules import Verdict, words
from experiments.analysis.verdicts.section import Section

CSS_CLASS = {Verdict.HOLDS: "v-holds", Verdict.FAILS: "v-does", Verdict.UNSURE: "v-inconclusive",
             Verdict.FEW: "v-inconclusive", Verdict.UNSEEN: "v-not", Verdict.UNMEASURED: "v-not"}


def verdict_words(s: Section) -> str:
    """'holds', …, 'inconclusive (too few seeds: n = 2 < 3)'."""
    return words(s.verdict, s.seeds)


def rule(s: Section) -> str:
    """The section's full rule; sub-claim 4's is written here in render (render/quality.py)."""
    return quality.RULE if s.key == "quality" else s.rule


def rule_brief(s: Section) -> str:
    """The rule in one sentence (empty where a section states only the full rule)."""
    return quality.RULE_BRIEF if s.key == "quality" else s.rule_brief
