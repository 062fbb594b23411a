"""The engine of the job's stages: the runner contract and the in-process runner
(`runner`), named rounds (`rounds`), the scratch files rounds exchange (`scratch`), the
completion records of `--resume` (`records`), the options helpers of the stage contract
(`contract`) and what every Python task does at its end (`worker`).

Importing this package imports nothing else: the job's `--help` reads `contract` alone.
"""
