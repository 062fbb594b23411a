"""Near-duplicate settings and their flags (`minhash` and `distributed` do the work): apart, so
that the job's and the trainer's flags are built without numpy, pandas and pyarrow (the
job's `--help`)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from extractor.core.errors import UserError


class NearDupSettingsError(UserError, ValueError):
    """Near-duplicate settings that do not fit together (one-line message)."""


@dataclass(frozen=True)
class Settings:
    """Near-duplicate settings; the defaults are documented in docs/neardup.md.

    threshold: a pair of texts is a near-duplicate when the Jaccard index of their shingle
      sets is at least this (with ``shingle=1``: the word sets, as `statistics.overlap_jaccard`).
    shingle: words per shingle.
    num_perm: MinHash values per text; bands: LSH bands (``num_perm`` a multiple of it).
      With 120 values in 20 bands of 6, a pair of Jaccard 0.8 shares a band with
      probability 1 - (1 - 0.8**6)**20 = 0.9977, of 0.9: 1.0000, of 0.5: 0.27, of 0.2:
      0.0013 (bands of 4 rows let many more unrelated pairs through: docs/neardup.md has
      the counts).
    seed: draws the hash functions (not the job's seed: signatures stay comparable).
    max_bucket: each text of a bucket is compared with at most this many others (the first
      in id order), so a bucket of a template shared by thousands of texts stays linear.
    """
    threshold: float = 0.8
    shingle: int = 1
    num_perm: int = 120
    bands: int = 20
    seed: int = 1
    max_bucket: int = 64

    def __post_init__(self):
        if not 0.0 < self.threshold <= 1.0:
            raise NearDupSettingsError(f"near-duplicate threshold {self.threshold} is not in (0, 1]: "
                                       "give a Jaccard index such as 0.8")
        if self.shingle < 1:
            raise NearDupSettingsError(f"near-duplicate shingle size {self.shingle} is below 1: give 1 or more words")
        if self.bands < 1 or self.num_perm < self.bands or self.num_perm % self.bands:
            raise NearDupSettingsError(f"near-duplicate permutations {self.num_perm} are not a multiple of the "
                                       f"{self.bands} bands: give a number of permutations divisible by the bands")
        if self.max_bucket < 1:
            raise NearDupSettingsError(f"near-duplicate max bucket {self.max_bucket} is below 1")

    @property
    def rows(self) -> int:
        return self.num_perm // self.bands

    def candidate_probability(self, jaccard: float) -> float:
        """Probability that two texts of this Jaccard index share at least one band."""
        return 1.0 - (1.0 - jaccard ** self.rows) ** self.bands

    def as_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------- flags

@dataclass(frozen=True)
class NearDuplicateOptions:
    """The near-duplicate flags as options, declared once with their defaults: the options of
    every stage that reads them derive from it (stages 2 and 3: the job's one flag group;
    the settings are checked when the options are built)."""
    near_duplicates: str = "on"
    near_duplicate_threshold: float = Settings.threshold
    near_duplicate_shingle: int = Settings.shingle
    near_duplicate_permutations: int = Settings.num_perm
    near_duplicate_bands: int = Settings.bands

    def __post_init__(self):
        settings_from_args(self)  # a bad combination fails here, before any work

    @property
    def near(self) -> Settings | None:
        """The settings of the flags; None with ``--near-duplicates off``."""
        return settings_from_args(self)


def add_arguments(parser, default: str = NearDuplicateOptions.near_duplicates) -> None:
    """``--near-duplicates on|off`` and the settings flags (the job and `trainer stats`)."""
    d = Settings()
    parser.add_argument("--near-duplicates", choices=("on", "off"), default=default,
                        help=f"near-duplicate detection (MinHash LSH, docs/neardup.md; default: {default})")
    parser.add_argument("--near-duplicate-threshold", type=float, default=d.threshold, metavar="J",
                        help=f"Jaccard index of shingle sets from which two texts are near-duplicates "
                             f"(default: {d.threshold})")
    parser.add_argument("--near-duplicate-shingle", type=int, default=d.shingle, metavar="N",
                        help=f"words per shingle (default: {d.shingle}: word sets)")
    parser.add_argument("--near-duplicate-permutations", type=int, default=d.num_perm, metavar="N",
                        help=f"MinHash values per text (default: {d.num_perm})")
    parser.add_argument("--near-duplicate-bands", type=int, default=d.bands, metavar="N",
                        help=f"LSH bands, dividing the permutations (default: {d.bands})")


def settings_from_args(args: Any) -> Settings | None:
    """The `Settings` of parsed flags, None with ``--near-duplicates off`` (a bad
    combination raises `NearDupSettingsError`, a one-line user error)."""
    if getattr(args, "near_duplicates", "on") == "off":
        return None
    return Settings(threshold=args.near_duplicate_threshold, shingle=args.near_duplicate_shingle,
                    num_perm=args.near_duplicate_permutations, bands=args.near_duplicate_bands)


def settings_line(settings: dict) -> str:
    return (f"Jaccard >= {settings['threshold']} of {settings['shingle']}-word shingle sets of normalised words; "
            f"MinHash {settings['num_perm']} values in {settings['bands']} bands of "
            f"{settings['num_perm'] // settings['bands']}")
