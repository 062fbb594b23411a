"""One module per `python -m trainer COMMAND` (registered in trainer/cli.py): each holds its
arguments (``add_arguments(parser)``) and ``run(args) -> int`` and imports no other command;
what commands share lives in trainer/data, trainer/training, trainer/analysis,
trainer/models and trainer/annotation."""
