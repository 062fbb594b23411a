"""Near-duplicate leakage between the splits of a dataset (`python -m trainer stats`) and its
Markdown table: the MinHash kernels of `extractor.neardup.minhash` over every split's
distinct texts."""
from __future__ import annotations

import numpy as np

from extractor import statistics
from extractor.neardup.minhash import (Shingles, band_keys, band_rows, bucket_pairs, pair_jaccard,
                                       shingle_sets, signatures, sorted_unique)
from extractor.neardup.settings import Settings, settings_line


def near_duplicate_leakage(splits: dict, settings: Settings) -> dict:
    """Near-duplicate leakage between every two splits ``"A|B"`` of ``{name: (premises,
    hypotheses)}``: per split, its distinct hypotheses (after `statistics.fold_text`) with a
    hypothesis of the other split at Jaccard >= threshold, and its rows (pairs) whose
    premise and hypothesis both are at Jaccard >= threshold with the premise and hypothesis
    of one pair of the other split. Identical texts count (Jaccard 1): the exact leakage is
    the part of these with Jaccard 1 (see ``leakage`` for it)."""
    names = list(splits)
    texts: dict[str, int] = {}
    rows = {}
    for name in names:
        prem, hyp = splits[name]
        p = np.array([texts.setdefault(statistics.fold_text(t or ""), len(texts)) for t in prem], dtype=np.int64)
        h = np.array([texts.setdefault(statistics.fold_text(t or ""), len(texts)) for t in hyp], dtype=np.int64)
        rows[name] = (p, h)
    node_text = list(texts)
    sh = shingle_sets(node_text, settings)
    # hypothesis graph: LSH over the distinct hypothesis nodes only
    hyp_nodes = sorted_unique(np.concatenate([rows[n][1] for n in names])) if names else np.zeros(0, np.int64)
    sub = _subset(sh, hyp_nodes)
    keys = band_keys(signatures(sub, settings), settings)
    k, i = band_rows(hyp_nodes, keys)
    cand = bucket_pairs(k, i, settings.max_bucket)
    jac = pair_jaccard(sh, cand[:, 0], cand[:, 1])
    edges = cand[jac >= settings.threshold]
    # both directions and every node to itself
    link = np.concatenate([edges, edges[:, ::-1], np.stack([hyp_nodes, hyp_nodes], axis=1)])
    out: dict = {"settings": settings.as_dict()}
    for a_i, a in enumerate(names):
        for b in names[a_i + 1:]:
            block: dict[str, dict] = {"hypotheses": {}, "pairs": {}, "rows": {}}
            for x, y in ((a, b), (b, a)):
                xh, yh = sorted_unique(rows[x][1]), sorted_unique(rows[y][1])
                ln = link[np.isin(link[:, 0], xh) & np.isin(link[:, 1], yh)]
                block["hypotheses"][x] = int(len(sorted_unique(ln[:, 0])))
                block["pairs"][x] = int(_pairs_with_match(rows[x], rows[y], ln, sh, settings.threshold).sum())
                block["rows"][x] = int(len(rows[x][0]))
            out[f"{a}|{b}"] = block
    return out


def _subset(sh: Shingles, nodes: np.ndarray) -> Shingles:
    sizes = sh.sizes[nodes]
    offsets = np.zeros(len(nodes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    at = np.repeat(sh.offsets[nodes], sizes) + (np.arange(int(offsets[-1])) - np.repeat(offsets[:-1], sizes))
    return Shingles(offsets, sh.values[at])


def _pairs_with_match(xrows, yrows, links: np.ndarray, sh: Shingles, threshold: float,
                      chunk: int = 1 << 20) -> np.ndarray:
    """Per row of split x: whether a row of split y has a linked hypothesis (`links`:
    (x hypothesis node, y hypothesis node)) and a premise at Jaccard >= `threshold`."""
    xp, xh = xrows
    yp, yh = yrows
    found = np.zeros(len(xp), dtype=bool)
    if not len(links) or not len(xp) or not len(yp):
        return found
    # y rows by hypothesis node
    y_order = np.argsort(yh, kind="stable")
    y_sorted = yh[y_order]
    # x rows joined to the links through their hypothesis
    x_order = np.argsort(xh, kind="stable")
    x_sorted = xh[x_order]
    lo = np.searchsorted(x_sorted, links[:, 0], side="left")
    hi = np.searchsorted(x_sorted, links[:, 0], side="right")
    n_x = hi - lo
    link_rep = np.repeat(np.arange(len(links)), n_x)
    x_row = x_order[np.repeat(lo, n_x) + (np.arange(len(link_rep)) - np.repeat(np.cumsum(n_x) - n_x, n_x))]
    ylo = np.searchsorted(y_sorted, links[link_rep, 1], side="left")
    yhi = np.searchsorted(y_sorted, links[link_rep, 1], side="right")
    n_y = yhi - ylo
    # (x row, y row) candidates in chunks: premise Jaccard
    starts = np.cumsum(n_y) - n_y
    total = int(n_y.sum())
    for c0 in range(0, total, chunk):
        c1 = min(total, c0 + chunk)
        which = np.searchsorted(starts, np.arange(c0, c1), side="right") - 1
        yr = y_order[ylo[which] + (np.arange(c0, c1) - starts[which])]
        xr = x_row[which]
        todo = ~found[xr]
        xr, yr = xr[todo], yr[todo]
        same = xp[xr] == yp[yr]
        ok = same.copy()
        if (~same).any():
            ok[~same] = pair_jaccard(sh, xp[xr[~same]], yp[yr[~same]]) >= threshold
        found[xr[ok]] = True
    return found


def leakage_markdown(near: dict) -> str:
    """The near-duplicate leakage table of `near_duplicate_leakage`'s result."""
    lines = ["Near-duplicate leakage (" + settings_line(near["settings"]) + "; identical texts included):", "",
             "| splits | split | rows | pairs with a near-duplicate pair in the other split "
             "| distinct hypotheses with a near-duplicate in the other split |",
             "|---|---|---:|---:|---:|"]
    for key, block in near.items():
        if key == "settings":
            continue
        for name in block["rows"]:
            rows = block["rows"][name]
            pairs = block["pairs"][name]
            share = f" ({100 * pairs / rows:.1f} %)" if rows else ""
            lines.append(f"| {key.replace('|', ' / ')} | {name} | {rows:,} | {pairs:,}{share} | "
                         f"{block['hypotheses'][name]:,} |")
    return "\n".join(lines)
