"""Human validation of distantly supervised NLI labels (RoNLI §3, ESNLIR §3.6, IndoNLI §3.2).

- :mod:`trainer.annotation.guidelines`: the label set and the per-language guidelines
  (``annotation`` key of ``phrase_lexicons/<lang>.yaml``), Label Studio labeling config.
- :mod:`trainer.annotation.blind_batches`: blind, seeded annotation batches (annotator CSVs,
  Label Studio tasks).
- :mod:`trainer.annotation.readers`: annotator CSVs and Label Studio exports (JSON, JSON_MIN,
  CSV) -> one long table of annotations, with bad input reported in one line.
- :mod:`trainer.annotation.agreement`: Fleiss κ (statsmodels), Cohen κ and per-class
  figures (scikit-learn), Krippendorff α (krippendorff), majority labels, rounds.
- :mod:`trainer.annotation.outputs`: agreement.json, report.md, confusion-matrix PNG,
  validated split loadable with ``datasets.load_dataset``, the dataset card section.
- :mod:`trainer.annotation.simulate`: simulated annotators, to rehearse a round.

The command is ``python -m trainer annotate export|import`` (:mod:`trainer.commands.annotate`).
"""
