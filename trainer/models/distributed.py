"""Data-parallel training under `torchrun` (gloo on CPU processes, NCCL on GPUs).

    torchrun --nproc_per_node N -m trainer train ... --output RUN_DIR

`torchrun` sets ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK``; `setup_run` (called by
``train``) starts the process group, pins each process to its GPU and gives every rank but
0 a scratch copy of the run directory, so that rank 0 alone writes ``RUN_DIR`` and
every rank takes the same decisions (resume, finished seeds) from the same files.

How the loop shares work (``trainer.models.loop``): every rank builds the same batch schedule
from the seed, and each optimisation step's rows are dealt out ``rows[rank::world]``:
the union of the shares is exactly the one-process step (no sampler padding, so no
duplicated example, also in the last, short step). Each rank's loss is its examples' sum
over the *global* step size; one all-reduce (sum) of the gradients per step then gives
every rank the one-process gradient, and the identical optimizer steps keep the
replicas equal. Predictions (validation, training dynamics, test) are sharded by batch
and gathered on every rank in input order. So a run on N processes equals the
one-process run up to floating-point rounding, when the model has no dropout (dropout
masks are drawn per process).
"""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

from extractor.io.atomic import unfinished_path

try:
    import torch
    HAVE_TORCH = True
except ImportError:  # `train` of the scikit-learn models runs without torch
    HAVE_TORCH = False

_MIRRORS: dict[Path, Path] = {}  # rank > 0: scratch run directory -> rank 0's


def world_size() -> int:
    if HAVE_TORCH and torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_world_size()
    return 1


def rank() -> int:
    if HAVE_TORCH and torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank()
    return 0


def is_main() -> bool:
    return rank() == 0


def active() -> bool:
    return world_size() > 1


def launched() -> bool:
    """True when torchrun (or any launcher) asked for more than one process."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def init(device: str | None = "auto") -> None:
    """Start the process group from torchrun's environment (no-op for one process).

    NCCL when the run uses CUDA, gloo otherwise; each process takes GPU ``LOCAL_RANK``.
    """
    if not launched() or torch.distributed.is_initialized():
        return
    use_cuda = torch.cuda.is_available() and (device in (None, "auto") or str(device).startswith("cuda"))
    if use_cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    torch.distributed.init_process_group(backend="nccl" if use_cuda else "gloo")
    atexit.register(_shutdown)


def _shutdown() -> None:
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def setup_run(out: Path, device: str | None = "auto") -> Path:
    """Start the group and return the run directory this rank writes to.

    Rank 0 writes ``out``. Other ranks write a scratch copy of it (checkpoint weights left
    out, as empty files: the loop reads rank 0's), deleted at exit, and print nothing.
    """
    if not launched():
        return out
    init(device)
    if is_main():
        barrier()  # the other ranks copy `out` before rank 0 changes it
        return out
    scratch = Path(tempfile.mkdtemp(prefix=f"nli-rank{rank()}-"))
    atexit.register(shutil.rmtree, scratch, True)
    out = Path(out)
    # the run and its work folder (`RUN.inprogress`, where an unfinished run and its checkpoint live)
    for src in (out, unfinished_path(out)):
        if src.exists():
            dst = scratch / src.name
            shutil.copytree(src, dst, ignore=lambda d, names: [n for n in names if n.endswith(".pt")])
            for pt in src.rglob("*.pt"):  # same files present, none of the gigabytes
                (dst / pt.relative_to(src)).touch()
    _MIRRORS[scratch.resolve()] = out.resolve().parent
    mirror = scratch / out.name
    barrier()
    sys.stdout = open(os.devnull, "w")  # rank 0 prints the results
    return mirror


def main_path(path: Path) -> Path:
    """Rank 0's version of a path inside this rank's scratch run directory."""
    path = Path(path).resolve()
    for mirror, real in _MIRRORS.items():
        if path == mirror or mirror in path.parents:
            return real / path.relative_to(mirror)
    return path


def barrier() -> None:
    if active():
        torch.distributed.barrier()


def broadcast_model(model) -> None:
    """Rank 0's parameters and buffers on every rank."""
    if not active():
        return
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            torch.distributed.broadcast(t.data, src=0)


def all_reduce_grads(params: list, bucket_elems: int = 1 << 25) -> None:
    """Sum the gradients of every rank in place (missing gradients count as zeros)."""
    if not active():
        return
    from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    buckets: list[list[torch.Tensor]] = []
    size = 0
    for p in params:  # one bucket per dtype run, at most bucket_elems elements each
        g = p.grad
        if not buckets or size + g.numel() > bucket_elems or buckets[-1][0].dtype != g.dtype:
            buckets.append([])
            size = 0
        buckets[-1].append(g)
        size += g.numel()
    for bucket in buckets:
        flat = _flatten_dense_tensors(bucket)
        torch.distributed.all_reduce(flat)
        for g, synced in zip(bucket, _unflatten_dense_tensors(flat, bucket)):
            g.copy_(synced)


def all_reduce_sum(t):
    if active():
        torch.distributed.all_reduce(t)
    return t


def all_gather_objects(obj) -> list:
    if not active():
        return [obj]
    out = [None] * world_size()
    torch.distributed.all_gather_object(out, obj)
    return out

