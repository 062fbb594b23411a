"""Reading a run's predictions: metrics (`metrics`), evaluation on new data and across label
sets (`evaluation`), stress tests (`stress`), data cartography (`cartography`), meta-inferential
consistency (`consistency`, `logic`) and significance tests between runs (`significance`)."""
