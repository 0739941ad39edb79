"""Unit tests of the synthetic tasks (src/experiments/tasks): the batch
contract, determinism, correct targets recomputed in numpy, key streams,
validation errors, and MQAR's power-law query distances."""

import hashlib
from dataclasses import replace
from pathlib import Path

import jax
import numpy as np
import pytest
from omegaconf import OmegaConf

from experiments.tasks import TASKS, fixed_set, get_task, stream_key, train_batch
from experiments.tasks.assoc_recall import AssocRecallConfig
from experiments.tasks.mqar import MQARConfig
from experiments.tasks.vector_retrieval import VectorRetrievalConfig
from experiments.tasks.mqar import gap_log_weights, n_slots

CONF = Path(__file__).resolve().parents[1] / "conf" / "task"
KEY = jax.random.PRNGKey(0)

B = 16  # one batch size throughout: each (config, batch size) costs a compile

# (task name, config) pairs: every registered task at its defaults, then settings picked on
# purpose: Zoology's reference sizes, zero fillers, and Zoology's values and head.
CASES = [(name, spec.config_cls()) for name, spec in sorted(TASKS.items())] + [
    ("mqar", MQARConfig(vocab_size=8192, seq_len=512, n_pairs=64)),
    ("mqar", MQARConfig(vocab_size=16, seq_len=13, n_pairs=3, random_fillers=False)),
    ("mqar", MQARConfig(vocab_size=32, n_pairs=12, distinct_values=True, head="full_vocab")),
    ("vector_retrieval", VectorRetrievalConfig(noise=0.0)),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]


def numpy_batch(name, cfg, rng=KEY, batch_size=B):
    return {k: np.asarray(v) for k, v in TASKS[name].make_batch(cfg, rng, batch_size).items()}


def many_batches(name, cfg, n_batches):
    """n_batches * B examples from distinct keys, without a new compile."""
    parts = [numpy_batch(name, cfg, jax.random.PRNGKey(i)) for i in range(n_batches)]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


@pytest.mark.parametrize("name,cfg", CASES, ids=IDS)
def test_contract_shapes_dtypes(name, cfg):
    spec = TASKS[name]
    b = numpy_batch(name, cfg)
    t, d = spec.seq_len(cfg), spec.d_in(cfg)
    assert set(b) == {"tokens", "vectors", "targets", "loss_mask"}
    assert b["tokens"].shape == (B, t) and b["tokens"].dtype == np.int32
    assert b["vectors"].shape == (B, t, d) and b["vectors"].dtype == np.float32
    assert b["targets"].shape == (B, t) and b["targets"].dtype == np.int32
    assert b["loss_mask"].shape == (B, t) and b["loss_mask"].dtype == np.float32
    assert 0 <= b["tokens"].min() and b["tokens"].max() < spec.input_vocab(cfg)
    assert 0 <= b["targets"].min() and b["targets"].max() < spec.n_classes(cfg)
    assert set(np.unique(b["loss_mask"])) <= {0.0, 1.0}
    assert (b["targets"][b["loss_mask"] == 0] == 0).all()


@pytest.mark.parametrize("name,cfg", CASES, ids=IDS)
def test_same_rng_same_batch(name, cfg):
    a, b = numpy_batch(name, cfg), numpy_batch(name, cfg)
    for k in a:
        assert a[k].tobytes() == b[k].tobytes(), k
    c = numpy_batch(name, cfg, rng=jax.random.PRNGKey(1))
    assert not np.array_equal(a["tokens"], c["tokens"])


def test_batches_jit_inside_an_outer_jit():
    # The train step closes over cfg and folds a traced step into the key.
    # (Every make_batch is traced under jit anyway: see common.jit_per_config.)
    spec, cfg = TASKS["mqar"], MQARConfig()
    jitted = jax.jit(lambda step: train_batch(spec, cfg, 0, step, B))(3)
    eager = train_batch(spec, cfg, 0, 3, B)
    for k in ("tokens", "targets", "loss_mask"):
        np.testing.assert_array_equal(eager[k], jitted[k])
    np.testing.assert_allclose(eager["vectors"], jitted["vectors"], atol=1e-6)


def test_assoc_recall_targets():
    cfg = AssocRecallConfig()
    b = numpy_batch("assoc_recall", cfg)
    half, n = cfg.vocab_size // 2, cfg.n_pairs
    for tok, tgt, mask in zip(b["tokens"], b["targets"], b["loss_mask"]):
        keys, values, query = tok[0:2 * n:2], tok[1:2 * n:2], tok[-1]
        assert len(set(keys)) == n and keys.min() >= 1 and keys.max() < half
        assert values.min() >= half
        (i,) = np.flatnonzero(keys == query)
        assert tgt[-1] == values[i] - half
        assert mask[-1] == 1 and mask.sum() == 1


@pytest.mark.parametrize("cfg", [c for n, c in CASES if n == "mqar"])
def test_mqar_targets(cfg):
    b = numpy_batch("mqar", cfg)
    half, n = cfg.vocab_size // 2, cfg.n_pairs
    offset = 0 if cfg.head == "full_vocab" else half  # class = the value token, or value - V//2
    for tok, tgt, mask in zip(b["tokens"], b["targets"], b["loss_mask"]):
        kv = dict(zip(tok[0:2 * n:2].tolist(), tok[1:2 * n:2].tolist()))
        assert len(kv) == n and min(kv) >= 1 and max(kv) < half
        assert min(kv.values()) >= half
        if cfg.distinct_values:
            assert len(set(kv.values())) == n
        pos = np.flatnonzero(mask)
        assert len(pos) == n and (pos >= 2 * n).all() and ((pos - 2 * n) % 2 == 0).all()
        assert sorted(tok[pos].tolist()) == sorted(kv)  # every key queried once
        for p in pos:
            assert tgt[p] == kv[tok[p]] - offset
        fillers = np.delete(tok, np.concatenate([np.arange(2 * n), pos]))
        if cfg.random_fillers:
            assert (fillers >= half).all()  # never a key: no distractors
        else:
            assert (fillers == 0).all()


def test_mqar_values_repeat_unless_distinct():
    """Values drawn with replacement repeat within a sequence (12 of 16 tokens: almost surely);
    distinct_values never does."""
    def repeats(cfg):
        b = numpy_batch("mqar", cfg)
        values = b["tokens"][:, 1:2 * cfg.n_pairs:2]
        return sum(len(set(row)) < cfg.n_pairs for row in values.tolist())

    assert repeats(MQARConfig(vocab_size=32, n_pairs=12)) > B // 2
    assert repeats(MQARConfig(vocab_size=32, n_pairs=12, distinct_values=True)) == 0


def test_mqar_head_sets_the_classes():
    assert TASKS["mqar"].n_classes(MQARConfig()) == 128
    assert TASKS["mqar"].n_classes(MQARConfig(head="full_vocab")) == 256


def test_mqar_defaults_give_the_study_batches():
    """The study's runs were trained on these bits: new options at their defaults change none."""
    b = numpy_batch("mqar", MQARConfig())
    digest = hashlib.sha256(b"".join(b[k].tobytes() for k in sorted(b))).hexdigest()[:16]
    assert digest == "c7f10cd51513ac36"


@pytest.mark.parametrize("name,cfg", CASES, ids=IDS)
def test_declared_queries_are_the_loss_positions(name, cfg):
    """A task's n_queries (the rows of the last layer, a compiled shape) is the most loss
    positions an example has: fewer would drop targets, more would waste rows."""
    per_example = many_batches(name, cfg, 4)["loss_mask"].sum(-1)
    assert TASKS[name].n_queries(cfg) == per_example.max()


def test_vector_retrieval_targets():
    # Without noise the query is exactly one key: the nearest key is the answer.
    cfg = VectorRetrievalConfig(noise=0.0)
    b = numpy_batch("vector_retrieval", cfg)
    n = cfg.n_keys
    keys, query = b["vectors"][:, :n], b["vectors"][:, n]
    np.testing.assert_allclose(np.linalg.norm(b["vectors"], axis=-1), 1.0, atol=1e-5)
    j = np.einsum("bnd,bd->bn", keys, query).argmax(1)
    labels = b["tokens"][:, :n] - 1
    np.testing.assert_array_equal(b["targets"][:, n], labels[np.arange(B), j])
    assert (b["tokens"][:, n] == 0).all()
    assert (b["loss_mask"][:, n] == 1).all() and b["loss_mask"].sum() == B


def test_vector_retrieval_noise_is_hard_but_solvable():
    def nearest_accuracy(noise):
        cfg = VectorRetrievalConfig(noise=noise)
        b, n = many_batches("vector_retrieval", cfg, 32), cfg.n_keys
        j = np.einsum("bnd,bd->bn", b["vectors"][:, :n], b["vectors"][:, n]).argmax(1)
        return (b["tokens"][np.arange(len(j)), j] - 1 == b["targets"][:, n]).mean()

    assert nearest_accuracy(1.0) > 0.97  # default: the Bayes ceiling is near 1
    assert nearest_accuracy(2.0) < 0.8  # more noise makes it genuinely harder


def test_mqar_gaps_follow_power_law():
    # One pair: the gap is a single draw from p(g) ~ (g+1)^(a-1), exactly.
    cfg = MQARConfig(seq_len=64, n_pairs=1)
    mask = numpy_batch("mqar", cfg, batch_size=8192)["loss_mask"]
    freq = mask[:, 2::2].mean(0)
    p = np.exp(np.asarray(gap_log_weights(cfg)))
    np.testing.assert_allclose(freq, p / p.sum(), atol=0.02)
    # Several pairs (drawn without replacement): short distances still dominate.
    cfg = MQARConfig()
    counts = many_batches("mqar", cfg, 32)["loss_mask"][:, 2 * cfg.n_pairs::2].sum(0)
    assert len(counts) == n_slots(cfg)
    assert counts[:4].mean() > 2 * counts[-4:].mean()


def test_streams_are_disjoint():
    keys = {s: np.asarray(stream_key(0, s)).tobytes() for s in ("train", "val", "test")}
    assert len(set(keys.values())) == 3
    assert np.asarray(stream_key(1, "val")).tobytes() != keys["val"]
    spec, cfg = get_task("assoc_recall"), AssocRecallConfig()
    val = fixed_set(spec, cfg, 0, "val", B)
    test = fixed_set(spec, cfg, 0, "test", B)
    assert not np.array_equal(val["tokens"], test["tokens"])
    np.testing.assert_array_equal(val["tokens"], fixed_set(spec, cfg, 0, "val", B)["tokens"])
    train = [np.asarray(train_batch(spec, cfg, 0, s, B)["tokens"]) for s in range(3)]
    assert not np.array_equal(train[0], train[1])
    assert all(not np.array_equal(t, val["tokens"]) for t in train)
    with pytest.raises(ValueError, match="train"):
        stream_key(0, "valid")


BAD = [
    (AssocRecallConfig(n_pairs=32), "n_pairs"),  # only 31 key tokens in vocab 64
    (AssocRecallConfig(n_pairs=0), "n_pairs"),
    (AssocRecallConfig(vocab_size=2), "vocab_size"),
    (MQARConfig(n_pairs=17), "seq_len"),  # 64 < 4 * 17
    (MQARConfig(vocab_size=16, seq_len=64, n_pairs=8), "n_pairs"),
    (MQARConfig(power_a=0.0), "power_a"),
    (MQARConfig(power_a=-1.0), "power_a"),
    (MQARConfig(head="whole"), "head"),
    (VectorRetrievalConfig(noise=-0.1), "noise"),
    (VectorRetrievalConfig(n_keys=0), "n_keys"),
    (VectorRetrievalConfig(d_in=0), "d_in"),
    (VectorRetrievalConfig(n_labels=1), "n_labels"),
]


@pytest.mark.parametrize("cfg,field", BAD, ids=[f for _, f in BAD])
def test_validate_rejects_bad_values(cfg, field):
    spec = get_task(cfg.name)
    with pytest.raises(ValueError, match=rf"^task\.{field}: .*, got "):
        spec.validate(cfg)
    with pytest.raises(ValueError, match=rf"^task\.{field}: "):
        spec.make_batch(cfg, KEY, 2)


def test_get_task_unknown_lists_valid_names():
    with pytest.raises(ValueError) as err:
        get_task("mqr")
    assert all(name in str(err.value) for name in TASKS)


@pytest.mark.parametrize("name", sorted(p.stem for p in CONF.glob("*.yaml")))
def test_yaml_matches_schema_and_defaults(name):
    spec = TASKS[name]
    yaml = OmegaConf.load(CONF / f"{name}.yaml")
    assert list(yaml.pop("defaults")) == [f"/schema_task_{name}@_here_", "_self_"]  # typed by its schema
    merged = OmegaConf.merge(OmegaConf.structured(spec.config_cls), yaml)  # fails on unknown keys
    cfg = OmegaConf.to_object(merged)
    assert cfg == spec.config_cls() and cfg.name == name
    spec.validate(cfg)
    spec.validate(replace(cfg))
