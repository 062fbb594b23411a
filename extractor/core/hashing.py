"""Deterministic hashing of stable ids: the only source of randomness in the extractor."""
from __future__ import annotations

import hashlib
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def stable_hash(*parts: object, seed: int = 0) -> int:
    """A 63-bit non-negative integer from the parts and the seed, identical on every machine."""
    text = "\x1f".join(str(p) for p in (seed, *parts))
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big") >> 1


def byte_buffers(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The offsets (n + 1, int64) and bytes (uint8) of a large_binary array without nulls,
    as numpy views of its Arrow buffers: row i is ``data[offsets[i]:offsets[i + 1]]``."""
    n = len(values)
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)[values.offset:values.offset + n + 1]
    data = values.buffers()[2]
    return offsets, np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)


def utf8_slices(texts) -> tuple[memoryview, list[int]]:
    """The UTF-8 of a list or Arrow array of strings (or binaries; None as "None") as one
    buffer and the offsets of its rows: row i is ``data[ends[i]:ends[i + 1]]``. A per-row
    hash over slices of it copies no text into a Python bytes object (about half the cost
    of hashing `to_pylist`'s values, measured)."""
    if not isinstance(texts, (pa.Array, pa.ChunkedArray)):
        texts = pa.array(texts, pa.string())
    elif not pa.types.is_binary(texts.type) and not pa.types.is_large_binary(texts.type):
        texts = texts.cast(pa.string())
    values = pc.fill_null(texts.cast(pa.large_binary()), b"None")
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    offsets, data = byte_buffers(values)
    # ndarray has the buffer protocol; numpy's stubs declare `__buffer__` only for Python 3.12+
    return memoryview(data), offsets.tolist()  # type: ignore[arg-type]


def digests(texts, size: int, prefix: bytes = b""):
    """blake2b (`size` bytes) of `prefix` + each text's UTF-8, for a list or Arrow array of
    strings (None as "None"), as an (n, size) uint8 numpy array: one call per text, on its
    `utf8_slices` slice, from a copy of the hash of `prefix`."""
    data, ends = utf8_slices(texts)
    start = hashlib.blake2b(prefix, digest_size=size)

    def digest(a: int, b: int) -> bytes:
        h = start.copy()
        h.update(data[a:b])
        return h.digest()

    joined = b"".join([digest(a, b) for a, b in zip(ends[:-1], ends[1:])])
    return np.frombuffer(joined, dtype=np.uint8).reshape(len(ends) - 1, size)


def crc32s(texts):
    """zlib.crc32 of each text's UTF-8 (a list or Arrow array; None as "None"), as a numpy
    int64 array."""
    data, ends = utf8_slices(texts)
    return np.array([zlib.crc32(data[a:b]) for a, b in zip(ends[:-1], ends[1:])], dtype=np.int64)


def stable_hashes(values, seed: int = 0):
    """`stable_hash(value, seed=seed)` of every value of a list or Arrow array of strings
    (None hashes as "None"), as a numpy int64 array."""
    raw = digests(values, 8, f"{seed}\x1f".encode("utf-8"))
    return (raw.view(">u8").ravel() >> np.uint64(1)).astype(np.int64)


def stable_unit(*parts: object, seed: int = 0) -> float:
    """A number in [0, 1) from the parts and the seed."""
    return stable_hash(*parts, seed=seed) / float(1 << 63)


def stable_hex(*parts: object, length: int = 16) -> str:
    """A hex id of the parts (no seed): used for pair_id and doc ids."""
    text = "\x1f".join(str(p) for p in parts)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=length // 2).hexdigest()


def ref_key(ref) -> str:
    """The text of a sentence location (doc_id, section, para_idx, sent_idx), fields joined
    by \\x1e, None as the empty string: the form `pair_id` hashes."""
    if isinstance(ref, dict):
        ref = (ref.get("doc_id"), ref.get("section"), ref.get("para_idx"), ref.get("sent_idx"))
    return "\x1e".join("" if v is None else str(v) for v in ref)


def pair_id(premise_ref, hypothesis_ref, premise: str, hypothesis: str, label: str) -> str:
    """THE key of a pair (pairs/ and splits/ tables, training dynamics, annotations,
    predictions): 16 hex digits of blake2b over both locations, both texts and the label.
    No seed in it, so the same pair has the same id in every run. Locations are
    (doc_id, section, para_idx, sent_idx) tuples or dicts (`schemas.REF`)."""
    return stable_hex(ref_key(premise_ref), ref_key(hypothesis_ref), premise, hypothesis, label)


_M64 = (1 << 64) - 1


def mix_hash_array(values, salt):
    """A 63-bit hash of each integer (a `stable_hash`) of a numpy uint64 array and a salt:
    the splitmix64 finalizer, element-wise. Derives many hash orders from one `stable_hash`
    per item without another blake2b call (the neutral draw orders every sentence once per
    strategy and role). `salt` an int or an array of the same length; the scalar
    definition: `tests/pairs_reference.py` `mix_hash`."""
    with np.errstate(over="ignore"):
        salt = np.asarray(salt, dtype=np.uint64) if not isinstance(salt, int) else np.uint64(salt & _M64)
        z = values.astype(np.uint64) + (salt + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return (z ^ (z >> np.uint64(31))) >> np.uint64(1)
