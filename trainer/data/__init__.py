"""Reading NLI data: trainer/data/loading.py, the one loader of every trainer command."""
