"""The ``rcakit`` command.

    rcakit list                              chapters, their parameters and defaults
    rcakit run CHAPTER [-p NAME VALUE]...    rerun one chapter into book/chapters/
    rcakit book [--quick]                    run every chapter, then build the HTML
    rcakit validate PATH [--format F]        check LongRCA records or Who&When logs

A user mistake (unknown chapter, bad parameter, malformed file) is one line on
stderr and exit status 2; a chapter whose code fails exits with status 1.
"""

from __future__ import annotations

import argparse
import sys

from rcakit import RcakitError, chapters, runner


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, status 2, no usage dump
        raise RcakitError(f"{message} (see 'rcakit --help')")


def _list(args: argparse.Namespace) -> None:
    for chapter in chapters.all_chapters():
        print(f"{chapter.id}: {chapter.title}")
        for p in chapter.parameters.values():
            quick = f"  [quick: {chapter.quick[p.name]!r}]" if p.name in chapter.quick else ""
            print(f"    {p.name} = {p.default!r}{quick}  # {p.comment}")


def _run(args: argparse.Namespace) -> None:
    overrides = dict(args.param or [])
    params = runner.run_parameters(args.chapter, overrides, args.quick)  # fail before a kernel starts
    uses_llm = any(str(params.get(k, "none")) != "none" for k in ("provider", "judge_provider"))
    before = _llm_cache_totals() if uses_llm else None
    out = runner.run_chapter(args.chapter, overrides, quick=args.quick)
    if before is not None:
        after = _llm_cache_totals()
        hits, misses = (after[k] - before[k] for k in ("hits", "misses"))
        print(f"LLM cache: +{hits} hits, +{misses} misses (model calls)", file=sys.stderr)
    print(out)


def _llm_cache_totals() -> dict:
    """The response cache's cross-process counters (the chapter runs in a kernel)."""
    from rcakit.llm import cache_totals

    return cache_totals()


def _book(args: argparse.Namespace) -> None:
    from tqdm import tqdm

    ids = chapters.ORDER
    for cid in ids:
        runner.run_parameters(cid, quick=args.quick)
    for cid in tqdm(ids, desc="chapters", file=sys.stderr):
        runner.run_chapter(cid, quick=args.quick)
    if not args.no_build:
        print(runner.build_book())


def _validate(args: argparse.Namespace) -> None:
    from rcakit.trajectories import validate_path

    n_good, errors = validate_path(args.path, args.format)
    print(f"{args.path}: {n_good} good records, {len(errors)} bad")
    if errors:
        more = f" (and {len(errors) - 1} more bad records)" if len(errors) > 1 else ""
        raise RcakitError(errors[0] + more)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="rcakit", description="Causal failure attribution workbench.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("list", help="chapters and their parameters").set_defaults(func=_list)
    run = sub.add_parser("run", help="rerun one chapter with new parameters")
    run.add_argument("chapter")
    run.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"))
    run.add_argument("--quick", action="store_true", help="start from the chapter's quick values")
    run.set_defaults(func=_run)
    book = sub.add_parser("book", help="run every chapter and build the HTML")
    book.add_argument("--quick", action="store_true", help="run chapters with their quick values")
    book.add_argument("--no-build", action="store_true", help="run the chapters only")
    book.set_defaults(func=_book)
    val = sub.add_parser("validate", help="check LongRCA records or Who&When logs (file or folder)")
    val.add_argument("path")
    val.add_argument("--format", default="auto", help="auto, longrca or who_and_when")
    val.set_defaults(func=_validate)
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
        args.func(args)
    except RcakitError as err:
        print(f"rcakit: error: {err}", file=sys.stderr)
        return 2
    except runner.ChapterFailed as err:
        print(f"rcakit: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
