"""The first screen of the dashboard and the opening of REPORT.md: the answer block, the quick look
(too few seeds for a verdict), one line per sub-claim with its key number, the rules folded, the
common conditions stated once. Figures are left out (tests/test_analysis.py draws them)."""

from __future__ import annotations

import re

import pytest
from fixtures_results import write_synthetic_results

from experiments.analysis import results as analysis_results
from experiments.analysis.render import dashboard as dashboard_html
from experiments.analysis.render import report as report_md
from experiments.analysis.verdicts import sections as verdict_sections
from experiments.analysis.render.clauses import estimates
from experiments.analysis.render.words import CSS_CLASS, headline, rule_brief, verdict_words
from experiments.analysis.verdicts.rules import FEW, Band, Side, judge
from experiments.analysis.verdicts.section import Probe, Runs


def _built(root):
    res = analysis_results.load_results(root)
    sections = verdict_sections.all_sections(res)
    return res, sections, dashboard_html.render(res, sections, [], []), report_md.render(res, sections)


@pytest.fixture(scope="module")
def two_seeds(tmp_path_factory):
    return _built(write_synthetic_results(tmp_path_factory.mktemp("two"), n_seeds=2))


@pytest.fixture(scope="module")
def three_seeds(tmp_path_factory):
    return _built(write_synthetic_results(tmp_path_factory.mktemp("three")))


def _auc_means(res, task, optimizer, d_k) -> dict[str, float]:
    s = res.summary
    s = s[(s["task"] == task) & (s["optimizer"] == optimizer) & (s["d_k"] == d_k)]
    return s.groupby("attention")["accuracy_auc"].mean().to_dict()


def test_two_seeds_open_with_the_quick_look(two_seeds):
    res, sections, page, report = two_seeds
    assert all(s.verdict is FEW and s.seeds == 2 for s in sections if s.key != "cost")
    assert page.index("id='quick-look'") < page.index("id='first-screen'")
    headings = re.findall(r"^## (.+)$", report, re.M)
    assert headings[0] == "Quick look" and report.index("## Quick look") < report.index("| sub-claim |")
    auc = _auc_means(res, "mqar", "sgd", 128)
    row = next(ln for ln in report.split("*mqar, sgd: mean accuracy AUC*")[1].splitlines()
               if ln.startswith("| 128 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells == ["128", f"{auc['scaled']:.3f}", f"{auc['unscaled']:.3f}", f"{auc['additive']:.3f}",
                     f"{auc['scaled'] - auc['unscaled']:+.3f}"]
    assert f"{auc['scaled'] - auc['unscaled']:+.3f}" in page.split("id='quick-look'")[1].split("</section>")[0]


def test_enough_seeds_open_with_the_verdicts(three_seeds):
    _, sections, page, report = three_seeds
    assert "id='quick-look'" not in page and "Quick look" not in report
    assert report.index("| sub-claim | verdict | key number |") < report.index("## Common conditions")
    for s in sections:  # a line per sub-claim: its verdict and its key number, on the page and the report
        assert headline(s) and headline(s) != "not measured", s.key
        line = f"<span class='claim'>{s.title}</span> <span class='verdict {CSS_CLASS[s.verdict]}'>"
        assert line in page.replace("&#x27;", "'")
        assert f"| {s.title} | {verdict_words(s)} | {headline(s)} |" in report
    first = page.index("id='first-screen'")
    assert first < page.index("<details id='rules'>") < page.index("<h2>Runs</h2>")


def test_answer_block_comes_first(three_seeds):
    res, sections, _, _ = three_seeds
    page = dashboard_html.render(res, sections, [], [], answer="<p>scaled wins at large d_k</p>")
    assert page.index("<section id='answer'><p>scaled wins") < page.index("id='first-screen'")
    report = report_md.render(res, sections, answer="**The answer.** scaled wins at large d_k")
    assert report.index("**The answer.**") < report.index("| sub-claim |")


def test_report_states_common_conditions_once(three_seeds):
    _, sections, _, report = three_seeds
    at_init = {s.sources for s in sections if s.key in ("variance", "saturation", "jacobian")}
    assert len(at_init) == 1 and isinstance(next(iter(at_init))[0], Probe)  # one source, stated once
    quality = next(s for s in sections if s.key == "quality")
    assert [(r.task, r.optimizer) for r in quality.sources] == [("assoc_recall", "adam"), ("mqar", "sgd")]
    assert all(isinstance(r, Runs) and ("train.batch_size", "64") in r.config for r in quality.sources)
    assert report.index("## Common conditions") < report.index("## 1. Variance")
    assert report.count("`train.batch_size`=64") == 1  # every training run's, stated once
    assert report.count("init-time probe: input_model iid") == 1  # sections 1, 2, 3a share it
    bodies = [b for b in re.split(r"^## ", report, flags=re.M) if b[:1].isdigit()]
    assert len(bodies) == len(sections)
    for body, s in zip(bodies, sections):
        conditions = body[body.index("**Conditions"):].strip()  # the section's last paragraph
        if s.key in ("variance", "saturation", "jacobian"):
            assert conditions == "**Conditions.** those of sections 1, 2, 3a, stated at the top.", conditions
        elif s.key in ("quality", "extra"):  # training runs: what differs from every run's config
            assert "`train.batch_size`" not in conditions and "task `" in conditions, conditions
        rule = re.search(r"^\*\*Rule\.\*\* (.*)$", body, re.M).group(1)
        assert rule.startswith(rule_brief(s)) and rule.count(". ") == 1 and "docs/CLAIM.md" in rule, rule
        assert "<details><summary>The rule as computed</summary>" in body
    quality = next(b for b in bodies if b.startswith("4. "))  # two conditions: a line each
    assert re.findall(r"^- task `(\w+)`; optimizer `(\w+)`", quality, re.M) == [("assoc_recall", "adam"),
                                                                          ("mqar", "sgd")]
    assert len(re.findall(r"Student-t interval", report)) == 1


def test_estimates_are_the_clause_means():
    parts = [judge("a", [1.0, 1.2, 1.4], Band(Side.WITHIN, 0.9, 1.5)),
             judge("b", [-0.001, 0.0, -0.002], Band(Side.WITHIN, -1, 1)), judge("c", [], Band(Side.ABOVE, 0))]
    assert estimates(parts, ["unscaled", "scaled", "none"]) == "unscaled 1.20, scaled 0.00, none n/a"
    assert estimates(parts[:1], digits=3) == "a 1.200"
