"""Training: the torch loop (`loop`), data-parallel runs (`distributed`), curriculum batch
schedules (`curriculum`), run directories read and written (`runs`), a `train` run from
settings to outputs (`pipeline`) and `experiment` line-ups (`lineup`)."""
