"""Deterministic hashing of stable ids: the only source of randomness in the extractor."""
from __future__ import annotations

import hashlib


def stable_hash(*parts: object, seed: int = 0) -> int:
    """A 63-bit non-negative integer from the parts and the seed, identical on every machine."""
    text = "\x1f".join(str(p) for p in (seed, *parts))
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big") >> 1


def stable_unit(*parts: object, seed: int = 0) -> float:
    """A number in [0, 1) from the parts and the seed."""
    return stable_hash(*parts, seed=seed) / float(1 << 63)


def stable_hex(*parts: object, length: int = 16) -> str:
    """A hex id of the parts (no seed): used for pair_id and doc ids."""
    text = "\x1f".join(str(p) for p in parts)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=length // 2).hexdigest()
