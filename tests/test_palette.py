"""Every variant, the registry's and a user's own, is drawn in a colour a reader tells apart
from every other, and the dashboard draws each in its figures' colour."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from fixtures_mixed import NEW_VARIANT, PRIMARY, write_mixed_results
from matplotlib.colors import to_rgb

import attention
from attention.registry import Variant, no_params
from experiments.analysis import results as analysis_results
from experiments.analysis.figures import style
from experiments.analysis.render import dashboard

# CIE76 ΔE in Lab: about 2 is the smallest difference seen side by side; tab10's closest pair
# (purple and pink) is 27.7, 26° apart in hue. A shade of one hue reads as the same variant:
# light green beside green is ΔE 32 at 0.4°. So two variants' lines differ by ΔE 25, and by
# ΔE 40 where their hues lie within 20°.
MIN_DELTA_E, MIN_DELTA_E_ONE_HUE, ONE_HUE_DEGREES = 25.0, 40.0, 20.0
INVENTED = ("gated", "linear_attn", "my_variant")  # registered with no colour of their own
UNREGISTERED = "from_another_checkout"  # in a results folder, unknown to this registry


def lab(colour: str) -> np.ndarray:
    """sRGB (D65) -> CIE Lab."""
    rgb = np.array(to_rgb(colour))
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(a: str, b: str) -> float:
    return float(np.linalg.norm(lab(a) - lab(b)))


def hue_degrees(a: str, b: str) -> float:
    """The angle between two colours' hues in Lab's (a, b) plane."""
    (_, a1, b1), (_, a2, b2) = lab(a), lab(b)
    turn = abs(np.degrees(np.arctan2(b1, a1) - np.arctan2(b2, a2))) % 360
    return float(min(turn, 360 - turn))


def told_apart(a: str, b: str) -> bool:
    e = delta_e(a, b)
    return e >= (MIN_DELTA_E if hue_degrees(a, b) >= ONE_HUE_DEGREES else MIN_DELTA_E_ONE_HUE)


def test_lab_of_known_colours():
    assert np.allclose(lab("#ffffff"), [100, 0, 0], atol=0.05)
    assert np.allclose(lab("#ff0000"), [53.24, 80.09, 67.20], atol=0.05)  # the published sRGB red


def test_the_rule_tells_shades_of_one_hue_from_distinct_hues():
    assert not told_apart("#2ca02c", "#98df8a")  # green, light green
    assert told_apart("#9467bd", "#e377c2")  # tab10's purple and pink
    assert told_apart("#d62728", "#8c564b")  # tab10's red and brown: one hue, far apart


@pytest.fixture
def invented(monkeypatch):
    """The registry with INVENTED registered beside its own variants, as a user's modules would."""
    score = attention.VARIANTS["scaled"].score
    for name in INVENTED:
        monkeypatch.setitem(attention.VARIANTS, name, Variant(name, no_params, score))
    return attention.variant_names()


def test_every_pair_of_variant_colours_is_far_apart(invented):
    colours = {name: style.colour(name) for name in [*invented, UNREGISTERED]}
    assert set(INVENTED) <= set(colours)
    close = [(a, b, colours[a], colours[b]) for a, b in itertools.combinations(colours, 2)
             if not told_apart(colours[a], colours[b])]
    assert close == []


def test_spare_colours_are_far_from_each_other_and_every_own_colour():
    own = [v.color for v in attention.VARIANTS.values() if v.color]
    assert all(told_apart(a, b) for a, b in itertools.combinations([*own, *style.SPARE_COLOURS], 2))


def test_a_variant_keeps_its_colour_whatever_else_is_asked(invented):
    registered = style.palette()
    assert style.palette([UNREGISTERED, "another"]).items() >= registered.items()
    assert registered["scaled"] == attention.VARIANTS["scaled"].color
    assert [style.colour(n) for n in invented] == [registered[n] for n in invented]


def test_dashboard_draws_each_variant_in_its_figures_colour(tmp_path):
    res = analysis_results.load_results(write_mixed_results(tmp_path), primary_task=PRIMARY[0])
    page = dashboard.render(res, [], [], [])
    data = json.loads(page.split('id="dashboard-data">')[1].split("</script>")[0])
    shown = set(res.summary["attention"])
    assert NEW_VARIANT in shown and NEW_VARIANT not in attention.VARIANTS
    assert {v: data["colours"][v] for v in shown} == {v: style.colour(v) for v in shown}
