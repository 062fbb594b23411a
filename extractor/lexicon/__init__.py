"""Phrase lexicons: loading and validating `phrase_lexicons/<lang>.yaml` (`lexicon`), and
discovering a new language's candidate phrases from a sentence table (`discovery`, run as
`python -m extractor.lexicon.discover`)."""
