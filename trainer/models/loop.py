"""The torch training loop shared by every epoch-trained model (cbow-softmax, transformers).

HF-Trainer style: the loop knows optimisation (AdamW, linear warm-up/decay, clipping,
gradient accumulation, autocast, early stopping on validation macro-F1 with the best
weights restored, checkpoints for resume); everything else hooks in as a callback
(`DynamicsWriter` records training dynamics for cartography). The order of training
examples is a *batch schedule*: one list of training-row indices per optimisation step.
By default it is shuffled epochs from the seed; a curriculum passes its own.

On CUDA a thread builds the next batches into pinned memory while the GPU works. Under
`torchrun` each rank trains on its share of every step and predictions are gathered
(`trainer.models.distributed`), so N processes give the one-process result (docs/gpu.md).
"""
from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Protocol, Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn

from extractor.io.atomic import WorkFile
from trainer.errors import RunFileNotFound
from trainer.models import distributed

log = logging.getLogger("trainer")


class Encoded(Protocol):
    """Model-ready examples: ``batch(indices)`` builds padded CPU tensors for those rows."""
    labels: np.ndarray          # int64 label index per row
    n_classes: int
    lengths: np.ndarray | None  # token counts, for length grouping (None: all equal)

    def __len__(self) -> int: ...
    def batch(self, indices: Sequence[int]) -> dict[str, torch.Tensor]: ...


@dataclass
class LoopConfig:
    epochs: int = 3
    batch_size: int = 32           # examples per forward pass
    grad_accum: int = 1            # forward passes per optimisation step
    lr: float = 2e-5
    head_lr: float | None = None   # peak learning rate of the parameters under model.head (None: lr)
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0     # 0 disables clipping
    patience: int = 2              # epochs without validation gain before stopping; 0: never stop
    eval_batch_size: int = 128
    precision: str = "auto"        # auto (bf16 or fp16 autocast on GPU, fp32 on CPU), fp32, bf16, fp16
    group_by_length: bool = True
    seed: int = 0
    device: str = "auto"
    progress: bool = True
    prefetch: int | None = None    # batches built ahead in a thread (pinned on CUDA); None: 4 on CUDA, 0 else
    compile: bool = False          # torch.compile(dynamic=True) of the training forward
    deterministic: bool = False    # deterministic GPU kernels (use_deterministic_algorithms), slower

    @property
    def step_size(self) -> int:
        return self.batch_size * self.grad_accum


@dataclass
class LoopState:
    """What callbacks see. ``epoch`` is the 0-based epoch that just ended in on_epoch_end."""
    model: nn.Module
    device: torch.device
    config: LoopConfig
    steps_per_epoch: int
    total_steps: int
    epoch: int = 0
    global_step: int = 0
    best_score: float = -math.inf
    best_epoch: int = -1
    bad_epochs: int = 0
    should_stop: bool = False
    epoch_seconds: float = 0.0     # training time of the epoch that just ended (no eval, no callbacks)
    train_seconds: float = 0.0
    history: list[dict] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # callbacks store results here

    def predict(self, data: Encoded) -> np.ndarray:
        return predict_proba(self.model, data, device=self.device, batch_size=self.config.eval_batch_size,
                             precision=self.config.precision)


class Callback:
    def on_train_begin(self, state: LoopState) -> None: ...
    def on_train_batch(self, state: LoopState, rows: np.ndarray, logits: torch.Tensor) -> None:
        """The training forward pass of one micro-batch: its rows of the training data (this
        rank's share) and their logits, detached. Only callbacks that override it are called."""
    def on_step_end(self, state: LoopState) -> None: ...
    def on_epoch_end(self, state: LoopState) -> None: ...
    def on_train_end(self, state: LoopState) -> None: ...


# ---------------------------------------------------------------------------- devices

def select_device(name: str = "auto") -> torch.device:
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    return torch.device(name)


@contextlib.contextmanager
def deterministic_kernels():
    """Deterministic kernels while training, so that two runs (or a run and its --resume)
    give the same numbers on a GPU too: cuBLAS with a fixed workspace (CUBLAS_WORKSPACE_CONFIG,
    read when cuBLAS starts, so set before the first product), cuDNN without autotuning, and
    torch's deterministic implementations; ops that have none warn instead of stopping the
    run. The previous settings come back afterwards."""
    before = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
              torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = before[2], before[3]


def autocast_dtype(device: torch.device, precision: str) -> torch.dtype | None:
    """The autocast dtype, or None for fp32. "auto": bf16 where the GPU has it, else fp16."""
    if precision == "fp32" or (precision == "auto" and device.type != "cuda"):
        return None
    if precision == "bf16" or (precision == "auto" and torch.cuda.is_bf16_supported()):
        return torch.bfloat16
    return torch.float16


def _to(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


def _pin(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.pin_memory() for k, v in batch.items()}


def iter_batches(data: Encoded, row_lists: Iterable[Sequence[int] | np.ndarray], *, ahead: int = 0, pin: bool = False):
    """(rows, CPU batch) for each list of rows; with ahead > 0 a thread builds (and pins) them in advance."""
    if ahead <= 0:
        for rows in row_lists:
            b = data.batch(list(rows)) if len(rows) else None
            yield rows, (_pin(b) if pin and b is not None else b)
        return
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=ahead)
    stop = threading.Event()
    done = object()

    def produce():
        try:
            for rows in row_lists:
                b = data.batch(list(rows)) if len(rows) else None
                item = (rows, _pin(b) if pin and b is not None else b)
                while not stop.is_set():
                    try:
                        q.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
        except BaseException as exc:  # re-raised in the consumer
            q.put(exc)
            return
        q.put(done)

    thread = threading.Thread(target=produce, daemon=True, name="batch-prefetch")
    thread.start()
    try:
        while True:
            item = q.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()


# ---------------------------------------------------------------------------- schedules

def steps_per_epoch(n: int, step_size: int) -> int:
    return max(1, math.ceil(n / step_size))


def default_schedule(n: int, *, step_size: int, epochs: int, seed: int,
                     lengths: np.ndarray | None = None, group_by_length: bool = True) -> list[list[int]]:
    """Shuffled epochs from the seed: one list of row indices per optimisation step.

    With lengths, examples are sorted by length inside shuffled mega-batches of 50 steps
    (as HF's LengthGroupedSampler) so padding stays small; steps are then shuffled.
    """
    out: list[list[int]] = []
    for epoch in range(epochs):
        rng = np.random.default_rng([seed, epoch])
        perm = rng.permutation(n)
        if lengths is not None and group_by_length:
            mega = 50 * step_size
            perm = np.concatenate([chunk[np.argsort(-lengths[chunk], kind="stable")]
                                   for chunk in np.array_split(perm, max(1, math.ceil(n / mega)))])
            steps = [perm[i:i + step_size] for i in range(0, n, step_size)]
            steps = [steps[i] for i in rng.permutation(len(steps))]
        else:
            steps = [perm[i:i + step_size] for i in range(0, n, step_size)]
        out.extend(s.tolist() for s in steps)
    return out


def linear_warmup_decay(optimizer, warmup_steps: int, total_steps: int):
    """Linear warm-up to the peak learning rate, then linear decay to 0 (as HF's scheduler)."""
    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / max(1, warmup_steps)
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def adamw(model: nn.Module, lr: float, weight_decay: float, head_lr: float | None = None) -> torch.optim.AdamW:
    """AdamW without weight decay on biases and normalisation weights (BERT recipe).

    ``head_lr``: the peak learning rate of the parameters under ``model.head`` (a freshly
    initialised classifier on a pretrained encoder), the others keep ``lr``. The scheduler
    scales every group by the same factor."""
    groups: dict[tuple[bool, bool], list] = {}
    for name, p in model.named_parameters():
        if p.requires_grad:
            key = (name.startswith("head."), p.ndim < 2 or "norm" in name.lower())
            groups.setdefault(key, []).append(p)
    params = [{"params": ps, "weight_decay": 0.0 if no_decay else weight_decay,
               "lr": head_lr if head and head_lr is not None else lr}
              for (head, no_decay), ps in sorted(groups.items())]
    if any(p.is_cuda for ps in groups.values() for p in ps):
        return torch.optim.AdamW(params, lr=lr, fused=True)
    return torch.optim.AdamW(params, lr=lr)


# ---------------------------------------------------------------------------- inference

@torch.no_grad()
def predict_proba(model: nn.Module, data: Encoded, *, device: torch.device, batch_size: int = 128,
                  precision: str = "auto") -> np.ndarray:
    """Class probabilities for every row of data, batched by length (one row each, input order)."""
    was_training = model.training
    model.eval()
    n = len(data)
    order = np.argsort(-data.lengths, kind="stable") if data.lengths is not None else np.arange(n)
    dtype = autocast_dtype(device, precision)
    # under torchrun each rank scores every world-th batch; the shares are gathered in input order
    world, rank = distributed.world_size(), distributed.rank()
    starts = list(range(0, n, batch_size))[rank::world]
    mine, chunks = [], []
    for i in starts:
        idx = order[i:i + batch_size]
        with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            logits = model(**_to(data.batch(idx.tolist()), device))
        chunks.append(torch.softmax(logits.float(), dim=-1).cpu())
        mine.append(idx)
    model.train(was_training)
    probs = torch.cat(chunks).numpy() if chunks else np.zeros((0, getattr(data, "n_classes", 0)), dtype=np.float32)
    rows = np.concatenate(mine) if mine else np.zeros(0, dtype=np.int64)
    if world > 1:
        shares = distributed.all_gather_objects((rows, probs))
        rows = np.concatenate([r for r, _ in shares])
        probs = np.concatenate([p for _, p in shares]) if n else probs
    if n == 0:
        return np.zeros((0, getattr(data, "n_classes", 0)), dtype=np.float32)
    out = np.empty((n, probs.shape[1]), dtype=probs.dtype)
    out[rows] = probs
    return out


def macro_f1(y: np.ndarray, probs: np.ndarray, n_classes: int) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score(y, probs.argmax(1), labels=list(range(n_classes)), average="macro", zero_division=0))


# ---------------------------------------------------------------------------- the loop

CHECKPOINT = "state.pt"


def fit(model: nn.Module, train: Encoded, *, config: LoopConfig, val: Encoded | None = None,
        callbacks: Iterable[Callback] = (), schedule: Sequence[Sequence[int]] | None = None,
        class_weights: np.ndarray | None = None, checkpoint_dir: Path | None = None,
        resume: bool = False) -> LoopState:
    """Train `model` (its forward returns logits) on `train`; returns the final state.

    One epoch = ceil(len(train) / step_size) steps of the schedule; at each epoch end the
    loop evaluates validation macro-F1, runs the callbacks, and saves a checkpoint. The
    best validation weights are restored at the end.
    """
    with deterministic_kernels() if config.deterministic else contextlib.nullcontext():
        return _fit(model, train, config=config, val=val, callbacks=callbacks, schedule=schedule,
                    class_weights=class_weights, checkpoint_dir=checkpoint_dir, resume=resume)


def _fit(model, train, *, config, val, callbacks, schedule, class_weights, checkpoint_dir, resume) -> LoopState:
    callbacks = list(callbacks)
    device = select_device(config.device)
    torch.manual_seed(config.seed)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    model.to(device)
    distributed.broadcast_model(model)  # torchrun: every replica starts from rank 0's weights
    world, rank = distributed.world_size(), distributed.rank()
    spe = steps_per_epoch(len(train), config.step_size)
    if schedule is None:
        schedule = default_schedule(len(train), step_size=config.step_size, epochs=config.epochs,
                                    seed=config.seed, lengths=train.lengths,
                                    group_by_length=config.group_by_length)
    schedule = list(schedule)
    total = len(schedule)
    state = LoopState(model=model, device=device, config=config, steps_per_epoch=spe, total_steps=total)
    optimizer = adamw(model, config.lr, config.weight_decay, config.head_lr)
    scheduler = linear_warmup_decay(optimizer, int(config.warmup_ratio * total), total)
    dtype = autocast_dtype(device, config.precision)
    scaler = torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)
    weight = torch.as_tensor(class_weights, dtype=torch.float32, device=device) if class_weights is not None else None
    loss_fn = nn.CrossEntropyLoss(weight=weight, reduction="sum")
    best_state: dict | None = None

    ckpt = Path(checkpoint_dir) / CHECKPOINT if checkpoint_dir else None
    if resume:
        if ckpt is None or not ckpt.exists():
            raise RunFileNotFound(f"{ckpt or checkpoint_dir}: no checkpoint to resume from")
        saved = torch.load(distributed.main_path(ckpt), map_location="cpu", weights_only=False)  # rank 0's file
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        scaler.load_state_dict(saved["scaler"])
        best_state = saved["best_state"]
        for key in ("epoch", "global_step", "best_score", "best_epoch", "bad_epochs", "history",
                    "train_seconds", "extra"):
            setattr(state, key, saved[key])
        state.epoch += 1  # the next epoch to run
        torch.set_rng_state(saved["torch_rng"])
        if device.type == "cuda" and saved.get("cuda_rng") is not None:
            torch.cuda.set_rng_state_all(saved["cuda_rng"])
        log.info("resumed from %s at epoch %d, step %d", ckpt, state.epoch, state.global_step)

    for cb in callbacks:
        cb.on_train_begin(state)
    model.train()
    forward = torch.compile(model, dynamic=True) if config.compile else model
    params = [p for p in model.parameters() if p.requires_grad]
    # callbacks that read the training forward pass (DynamicsWriter's "forward" mode)
    batch_callbacks = [cb for cb in callbacks if type(cb).on_train_batch is not Callback.on_train_batch]
    ahead = config.prefetch if config.prefetch is not None else (4 if device.type == "cuda" else 0)
    pin = device.type == "cuda"
    n_epochs = math.ceil(total / spe)
    try:
        from tqdm.auto import tqdm
    except ImportError:  # progress bars are a convenience
        tqdm = None
    while state.global_step < total and not state.should_stop:
        epoch = state.epoch
        end = min(total, (epoch + 1) * spe)
        bar = tqdm(total=end - state.global_step, desc=f"epoch {epoch + 1}/{n_epochs}", leave=False,
                   disable=not config.progress or rank != 0) if tqdm else None
        t0 = time.perf_counter()
        loss_sum = torch.zeros((), device=device)
        n_seen = 0
        # one entry per micro-batch: (step, this rank's share of its rows); the share is
        # rows[rank::world], so the shares of all ranks are exactly the one-process batch
        micro_list = []
        for step in range(state.global_step, end):
            step_rows = np.asarray(schedule[step])
            parts = [m for m in np.array_split(step_rows, config.grad_accum) if len(m)]
            for j, m in enumerate(parts):
                micro_list.append((step, len(step_rows), j == len(parts) - 1, m[rank::world]))
        batches = iter_batches(train, [m[3] for m in micro_list], ahead=ahead, pin=pin)
        for (step, step_len, last, rows), (_, cpu_batch) in zip(micro_list, batches):  # noqa: B007
            if cpu_batch is not None:
                batch = _to(cpu_batch, device)
                y = torch.as_tensor(train.labels[rows]).to(device, non_blocking=True)
                with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
                    logits = forward(**batch)
                for cb in batch_callbacks:
                    cb.on_train_batch(state, rows, logits.detach())
                # mean over the whole (global) step, however it is split into micro-batches and ranks
                loss = loss_fn(logits.float(), y) / step_len
                scaler.scale(loss).backward()
                loss_sum += loss.detach() * step_len
            if not last:
                continue
            n_seen += step_len
            distributed.all_reduce_grads(params)  # torchrun: the sum of the shares' gradients
            if config.max_grad_norm > 0:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()
            state.global_step += 1
            for cb in callbacks:
                cb.on_step_end(state)
            if bar is not None:
                bar.update(1)
                if state.global_step % 20 == 0:  # .item() syncs the GPU: not every step
                    bar.set_postfix(loss=f"{loss_sum.item() / max(1, n_seen):.4f}")
        batches.close()
        if bar is not None:
            bar.close()
        if device.type == "cuda":
            torch.cuda.synchronize()
        state.epoch_seconds = time.perf_counter() - t0
        state.train_seconds += state.epoch_seconds
        distributed.all_reduce_sum(loss_sum)
        record = {"epoch": epoch, "step": state.global_step, "train_loss": loss_sum.item() / max(1, n_seen),
                  "seconds": round(state.epoch_seconds, 3)}
        if val is not None and len(val):
            score = macro_f1(val.labels, state.predict(val), train.n_classes)
            record["validation_macro_f1"] = score
            if score > state.best_score:
                state.best_score, state.best_epoch, state.bad_epochs = score, epoch, 0
                best_state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
            else:
                state.bad_epochs += 1
                if config.patience and state.bad_epochs >= config.patience:
                    state.should_stop = True
        state.history.append(record)
        for cb in callbacks:
            cb.on_epoch_end(state)
        log.info("epoch %d: %s", epoch, ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                                                 for k, v in record.items() if k != "epoch"))
        if state.should_stop:
            log.info("early stopping after epoch %d (best epoch %d, validation macro-F1 %.4f)",
                     epoch, state.best_epoch, state.best_score)
        if ckpt is not None and rank == 0:  # other ranks resume from rank 0's file
            _save_checkpoint(ckpt, state, model, optimizer, scheduler, scaler, best_state)
        state.epoch += 1
    state.epoch -= 1  # the last epoch run
    if best_state is not None:
        model.load_state_dict(best_state)
        log.info("restored the best validation weights (epoch %d, macro-F1 %.4f)", state.best_epoch, state.best_score)
    for cb in callbacks:
        cb.on_train_end(state)
    return state


def _save_checkpoint(path: Path, state: LoopState, model, optimizer, scheduler, scaler, best_state) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with WorkFile(path) as tmp:  # a crash mid-write never leaves a broken checkpoint
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "scaler": scaler.state_dict(), "best_state": best_state,
                    "epoch": state.epoch, "global_step": state.global_step, "best_score": state.best_score,
                    "best_epoch": state.best_epoch, "bad_epochs": state.bad_epochs, "history": state.history,
                    "train_seconds": state.train_seconds, "extra": state.extra,
                    "torch_rng": torch.get_rng_state(),
                    "cuda_rng": torch.cuda.get_rng_state_all() if state.device.type == "cuda" else None}, tmp)


# ---------------------------------------------------------------------------- dynamics

DYNAMICS_MODES = ("forward", "pass")


class _Rows:
    """Some rows of encoded data, themselves encoded data (to score only those rows)."""

    def __init__(self, data: Encoded, rows: np.ndarray):
        self.data, self.rows = data, np.asarray(rows, dtype=np.int64)
        self.labels = data.labels[self.rows]
        self.n_classes = data.n_classes
        lengths = getattr(data, "lengths", None)
        self.lengths = lengths[self.rows] if lengths is not None else None

    def __len__(self) -> int:
        return len(self.rows)

    def batch(self, indices: Sequence[int]) -> dict[str, torch.Tensor]:
        return self.data.batch([int(self.rows[i]) for i in indices])


class DynamicsWriter(Callback):
    """Training dynamics for cartography: ``dynamics/epoch_N.parquet`` after every epoch, one
    row per distinct training example (id, gold, gold_prob, pred, correct).

    Two sources of an example's probabilities in an epoch (docs/cartography.md):

    - ``forward``: the training forward pass itself, recorded as each micro-batch is trained
      (dropout on, the weights of that moment), as Swayamdipta et al.'s released code logs
      the training logits; it costs a softmax per batch. An example trained several times in
      an epoch (``--oversample``) gets the mean of its probabilities; one not trained in an
      epoch (a curriculum that leaves it out) is scored by a no-grad pass at the epoch's end.
      Needs ``train_ids``, the id of every training row (without them: ``pass``).
    - ``pass``: a no-grad pass over the distinct training rows after each epoch (eval mode,
      the epoch's final weights), the paper's definition read literally, for the price of
      one more forward pass over the training set per epoch.

    Its time (the per-batch recording plus the epoch-end work) is kept in
    ``state.extra["dynamics"]`` with its share of the training time.
    """

    def __init__(self, data: Encoded, ids: Sequence[str], labels: Sequence[str], out_dir: Path, *,
                 mode: str = "pass", train_ids: Sequence[str] | None = None):
        if mode not in DYNAMICS_MODES:
            raise ValueError(f"dynamics mode {mode!r}: expected one of {', '.join(DYNAMICS_MODES)}")
        self.data, self.ids, self.labels = data, pd.Series(list(ids), dtype=str), list(labels)
        self.out_dir = Path(out_dir)
        self.mode = mode if train_ids is not None else "pass"
        if self.mode == "forward" and train_ids is not None:
            index = {k: i for i, k in enumerate(self.ids)}
            self.row_of = np.array([index.get(str(k), -1) for k in train_ids], dtype=np.int64)
        self.spent = 0.0  # seconds recording in the current epoch

    def on_train_begin(self, state: LoopState) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        state.extra.setdefault("dynamics", {"epochs": []})
        state.extra["dynamics"]["mode"] = self.mode
        if self.mode == "forward":
            self._reset(state.device)

    def _reset(self, device: torch.device) -> None:
        self.prob_sum = torch.zeros((len(self.ids), self.data.n_classes), dtype=torch.float32, device=device)
        self.count = torch.zeros(len(self.ids), dtype=torch.float32, device=device)
        self.spent = 0.0

    def on_train_batch(self, state: LoopState, rows: np.ndarray, logits: torch.Tensor) -> None:
        if self.mode != "forward" or not len(rows):
            return
        t0 = time.perf_counter()
        target = self.row_of[np.asarray(rows)]
        keep = target >= 0  # rows outside the distinct set (none in practice) are not recorded
        if not keep.all():
            target, logits = target[keep], logits[torch.as_tensor(keep, device=logits.device)]
        idx = torch.as_tensor(target, device=self.prob_sum.device)
        self.prob_sum.index_add_(0, idx, torch.softmax(logits.float(), dim=-1).to(self.prob_sum.device))
        self.count.index_add_(0, idx, torch.ones(len(target), device=self.count.device))
        self.spent += time.perf_counter() - t0

    def on_epoch_end(self, state: LoopState) -> None:
        t0 = time.perf_counter()
        unseen = None
        if self.mode == "forward":
            distributed.all_reduce_sum(self.prob_sum)  # torchrun: each rank saw its share of every step
            distributed.all_reduce_sum(self.count)
            count = self.count.cpu().numpy()
            probs = (self.prob_sum / self.count.clamp_min(1)[:, None]).cpu().numpy()
            unseen = np.flatnonzero(count == 0)
            if len(unseen):
                probs[unseen] = state.predict(_Rows(self.data, unseen))
            spent = self.spent
            self._reset(state.device)
        else:
            probs = state.predict(self.data)
            spent = 0.0
        gold = self.data.labels
        pred = probs.argmax(1)
        names = np.asarray(self.labels, dtype=object)
        table = pd.DataFrame({"pair_id": self.ids, "gold": names[gold],
                              "gold_prob": probs[np.arange(len(gold)), gold].astype(np.float32),
                              "pred": names[pred], "correct": pred == gold})
        path = self.out_dir / f"epoch_{state.epoch}.parquet"
        with WorkFile(path) as tmp:
            table.to_parquet(tmp, index=False)
        seconds = spent + time.perf_counter() - t0
        entry = {"epoch": state.epoch, "seconds": round(seconds, 3), "epoch_seconds": round(state.epoch_seconds, 3),
                 "share": round(seconds / max(state.epoch_seconds, 1e-9), 4)}
        if unseen is not None:
            entry["scored_after_epoch"] = int(len(unseen))
        epochs = state.extra["dynamics"]["epochs"]
        epochs[:] = [e for e in epochs if e["epoch"] != state.epoch] + [entry]
        log.info("dynamics epoch %d (%s): %d rows in %.2fs (%.1f%% of the epoch's training time)",
                 state.epoch, self.mode, len(table), seconds, 100 * entry["share"])

    def on_train_end(self, state: LoopState) -> None:
        d = state.extra["dynamics"]
        d["seconds"] = round(sum(e["seconds"] for e in d["epochs"]), 3)
        d["share"] = round(d["seconds"] / max(state.train_seconds, 1e-9), 4)
