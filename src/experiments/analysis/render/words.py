"""A section in words, whichever sub-claim it reads: its verdict, claim, rule (in full and in one
sentence), reason, key number, notes and tables; and the dashboard's class for its verdict (its
colour). Each sub-claim's own words are in its module (at_init, quality, cost, mup)."""

from __future__ import annotations

import pandas as pd

from experiments.analysis.render import at_init, cost, mup, quality
from experiments.analysis.render.section_words import LACKS, SectionWords
from experiments.analysis.verdicts.rules import Verdict, words
from experiments.analysis.verdicts.section import Section

CSS_CLASS = {Verdict.HOLDS: "v-holds", Verdict.FAILS: "v-does", Verdict.UNSURE: "v-inconclusive",
             Verdict.FEW: "v-inconclusive", Verdict.UNSEEN: "v-not", Verdict.UNMEASURED: "v-not"}
SECTIONS: dict[str, SectionWords] = {**at_init.WORDS, "quality": quality.WORDS, "cost": cost.WORDS,
                                     "extra": mup.WORDS}


def verdict_words(s: Section) -> str:
    """'holds', …, 'inconclusive (too few seeds: n = 2 < 3)'."""
    return words(s.verdict, s.seeds)


def claim(s: Section) -> str:
    return SECTIONS[s.key].claim


def rule(s: Section) -> str:
    """The section's full rule."""
    return SECTIONS[s.key].rule


def rule_brief(s: Section) -> str:
    """The rule in one sentence."""
    return SECTIONS[s.key].brief


def reason(s: Section) -> str:
    """Why the verdict: its clauses, each with its interval and answer (or what was missing)."""
    return f"no data: {LACKS[s.lacks]}" if s.lacks else SECTIONS[s.key].reason(s)


def headline(s: Section) -> str:
    """The key number, a few words: what the first screen shows beside the verdict."""
    return "not measured" if s.lacks else SECTIONS[s.key].headline(s)


def notes(s: Section) -> list[str]:
    """Sub-verdicts and caveats, one line each."""
    return [] if s.lacks else SECTIONS[s.key].notes(s)


def tables(s: Section) -> list[tuple[str, pd.DataFrame]]:
    """(caption, table) of each of the section's tables."""
    return [] if s.lacks else SECTIONS[s.key].tables(s)
