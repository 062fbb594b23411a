"""A SentencePiece "precompiled charsmap" from a map of code points, for the `tokenizers`
library's ``normalizers.Precompiled`` (the normalizer of every converted XLM-R tokenizer).

The format (SentencePiece's ``normalizer.cc``): a little-endian uint32, the byte size of a
darts-clone double-array trie; the trie's 32-bit units; then the replacement strings, each
ending in a NUL byte. A key is the UTF-8 bytes of what is replaced; its value is the byte
offset of its replacement. The trie's units (darts-clone's ``DoubleArrayUnit``):

- an inner unit: ``label | has_leaf << 8 | offset << 10``, its children at
  ``(position ^ offset) ^ label``;
- a value unit (at ``position ^ offset``, label 0): ``value | 1 << 31``.

SentencePiece builds the trie with darts-clone; here a plain first-fit placement of each
node's children builds one the same lookups read.
"""
from __future__ import annotations

import struct

_LEAF = 1 << 8
_VALUE = 1 << 31
_MAX_OFFSET = 1 << 21  # offsets past this need darts-clone's extended encoding


def _trie(keys: list[bytes]) -> list[dict]:
    """Nodes as {"children": {byte: node index}, "value": key index or None}; node 0 the root."""
    nodes: list[dict] = [{"children": {}, "value": None}]
    for k, key in enumerate(keys):
        node = 0
        for byte in key:
            nxt = nodes[node]["children"].get(byte)
            if nxt is None:
                nxt = len(nodes)
                nodes.append({"children": {}, "value": None})
                nodes[node]["children"][byte] = nxt
            node = nxt
        nodes[node]["value"] = k
    return nodes


def build(mapping: dict[str, str]) -> bytes:
    """The precompiled charsmap replacing each key of `mapping` by its value ("" deletes)."""
    keys = sorted(k.encode("utf-8") for k in mapping)
    if any(not k for k in keys):
        raise ValueError("an empty key cannot be replaced")
    blob = bytearray()
    value_of: dict[str, int] = {}
    for text in sorted(set(mapping.values())):
        value_of[text] = len(blob)
        blob += text.encode("utf-8") + b"\0"
    nodes = _trie(keys)
    values = [value_of[mapping[k.decode("utf-8")]] for k in keys]

    used = bytearray(1 << 16)
    used[0] = 1  # the root
    units = [0] * (1 << 16)
    bases: set[int] = set()
    position = {0: 0}
    queue, head, first_free = [0], 0, 1
    while head < len(queue):
        node = queue[head]
        head += 1
        children = nodes[node]["children"]
        has_value = nodes[node]["value"] is not None
        labels = ([0] if has_value else []) + sorted(children)
        if not labels:
            continue
        while used[first_free]:
            first_free += 1
        free = first_free
        while True:  # first fit: the first label on a free slot, then the others checked
            base = free ^ labels[0]
            if base > 0 and base not in bases:
                slots = [base ^ lab for lab in labels]
                if max(slots) >= len(used):
                    used.extend(bytearray(len(used)))
                    units.extend([0] * len(units))
                if not any(used[s] for s in slots):
                    break
            free += 1
            while free < len(used) and used[free]:
                free += 1
            if free >= len(used):
                used.extend(bytearray(len(used)))
                units.extend([0] * len(units))
        pos = position[node]
        offset = pos ^ base
        if offset >= _MAX_OFFSET:
            raise ValueError("the trie outgrew darts-clone's short offsets")
        bases.add(base)
        units[pos] = (units[pos] & 0xFF) | (_LEAF if has_value else 0) | (offset << 10)
        if has_value:
            units[base] = values[nodes[node]["value"]] | _VALUE
            used[base] = 1
        for lab, child in children.items():
            slot = base ^ lab
            used[slot] = 1
            units[slot] = lab
            position[child] = slot
            queue.append(child)
    last = max(i for i in range(len(used)) if used[i])
    size = (last // 256 + 1) * 256  # every base ^ label of a lookup stays inside the array
    trie = struct.pack(f"<{size}I", *units[:size])
    return struct.pack("<I", len(trie)) + trie + bytes(blob)
