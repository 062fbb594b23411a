"""The items an annotation batch is drawn from and the groups they are reported by: the
chosen splits of a dataset as one frame, its language, annotator groups, cartography groups."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from extractor.core.errors import UserError
from trainer.analysis.cartography import GROUP_NAMES, GROUPS, load_cartography
from trainer.data.loading import discover, load_nli, load_split_file


def load_data(path: Path, splits: list[str] | None, mapping: dict,
              default_test: bool) -> tuple[pd.DataFrame, list[str]]:
    """The chosen splits of ``path`` as one frame with a ``split`` column (ids unique)."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file or folder (--data)")
    if path.is_dir():
        available = list(discover(path))
        if splits:
            missing = [s for s in splits if s not in available]
            if missing:
                raise UserError(f"{path}: no split {missing[0]!r}; splits are {', '.join(available)} (--split)")
        elif default_test:
            splits = ["test"] if "test" in available else (available if len(available) == 1 else None)
            if splits is None:
                raise UserError(f"{path}: several splits ({', '.join(available)}) and no test; name one with --split")
        if splits and all((path / s).is_dir() for s in splits):
            # split folders (our layout): read only the splits asked for, not a large train split
            loaded = {s: load_split_file(path / s, **mapping) for s in splits}
        else:
            loaded = load_nli(path, **mapping)
    else:
        loaded = load_nli(path, **mapping)
    if splits:
        missing = [s for s in splits if s not in loaded]
        if missing:
            raise UserError(f"{path}: no split {missing[0]!r}; splits are {', '.join(loaded)} (--split)")
        loaded = {s: loaded[s] for s in splits}
    frames = [df.assign(split=name) for name, df in loaded.items()]
    data = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].reset_index(drop=True)
    data["pair_id"] = data["pair_id"].astype(str)
    if "label" not in data.columns:  # unlabelled data: no automatic label to compare with
        data["label"] = None
    dup = data["pair_id"].duplicated(keep=False)
    if dup.any():
        first = data.loc[dup, "pair_id"].iloc[0]
        where = sorted(set(data.loc[data["pair_id"] == first, "split"]))
        raise UserError(f"{path}: item id {first!r} appears {int((data['pair_id'] == first).sum())} times "
                        f"(splits {', '.join(where)}); ids must be unique (--id-col, or name one --split)")
    return data, list(loaded)


def default_lang(data: pd.DataFrame) -> str:
    if "lang" in data.columns:
        values = data["lang"].dropna().astype(str)
        if len(values):
            return values.mode().iloc[0]
    return "en"


def parse_annotator_groups(specs: list[str] | None, known: set[str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for spec in specs or []:
        name, sep, members = spec.partition("=")
        names = [m.strip() for m in members.split(",") if m.strip()]
        if not sep or not name.strip() or not names:
            raise UserError(f"--annotator-group {spec!r}: write NAME=ANNOTATOR,ANNOTATOR,...")
        if name.strip() in groups:
            raise UserError(f"--annotator-group: the group {name.strip()!r} is given twice")
        unknown = [m for m in names if m not in known]
        if unknown:
            raise UserError(f"--annotator-group {name.strip()}: annotator {unknown[0]!r} labelled nothing; "
                            f"annotators are: {', '.join(sorted(known))}")
        groups[name.strip()] = names
    return groups


def cartography_groups(path: Path, ids: pd.Index) -> tuple[pd.Series, dict]:
    """item_id -> group name (E2L, A, H2L, no group; an item in two groups appears twice)."""
    table = load_cartography(path)
    table = table.assign(pair_id=table["pair_id"].astype(str)).drop_duplicates("pair_id").set_index("pair_id")
    mapped = table.index.intersection(ids)
    if len(mapped) == 0:
        raise UserError(f"{path}: none of the {len(ids)} annotated items has cartography; run cartography on a "
                        "model trained on these items (RoNLI trains Ro-BERT on the validation set)")
    pairs = []
    for item in mapped:
        row = table.loc[item]
        groups = [GROUP_NAMES[g] for g in GROUPS if bool(row[g])]
        pairs += [(item, g) for g in (groups or ["no group"])]
    order = {name: k for k, name in enumerate([*(GROUP_NAMES[g] for g in GROUPS), "no group"])}
    pairs.sort(key=lambda p: order[p[1]])
    series = pd.Series([g for _, g in pairs], index=pd.Index([i for i, _ in pairs], name="item_id"))
    return series, {"source": str(path), "mapped": int(len(mapped)), "unmapped": int(len(ids) - len(mapped))}
