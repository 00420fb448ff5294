"""The ``rcakit`` command.

    rcakit list                              chapters, their parameters and defaults
    rcakit run CHAPTER [-p NAME VALUE]...    rerun one chapter into book/chapters/
    rcakit book [--defaults | --quick]       run the chapters that are missing or stale, then build the HTML
    rcakit build                             build the HTML from the executed chapters present
    rcakit validate PATH [--format F]        check LongRCA records or Who&When logs
    rcakit data list | fetch NAME | verify NAME | path NAME   the named data sets (rcakit.data)

A user mistake (unknown chapter, bad parameter, malformed or unreadable file,
an unusable folder, an unreachable model server) is one line on stderr and exit
status 2, found before any kernel starts; a chapter whose code fails exits
with status 1; Ctrl-C prints one line and exits with status 130. No traceback
reaches the user unless ``$RCAKIT_TRACEBACK`` is set. ``validate`` is the one
command that reports several errors: one line per bad record on stderr, then
the count of good and bad records, and status 2 if any record was bad.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, NoReturn

from rcakit import RcakitError
from rcakit.book import build, registry, runner, staging
from rcakit.paths import absolute_folder_envs, check_source_date_epoch


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, status 2, no usage dump
        raise RcakitError(f"{message} (see 'rcakit --help')")


def _list(args: argparse.Namespace) -> None:
    for chapter in registry.all_chapters():
        print(f"{chapter.id}: {chapter.title}")
        for p in chapter.parameters.values():
            quick = f"  [quick: {chapter.quick[p.name]!r}]" if p.name in chapter.quick else ""
            allowed = _allowed(chapter, p.name)
            print(f"    {p.name} = {p.default!r}{quick}{allowed}  # {p.comment}")


def _allowed(chapter: registry.Chapter, name: str) -> str:
    """A parameter's valid values as ``rcakit list`` prints them: ``[lo, hi]`` (an open end as ∞) or the choices."""
    if name in chapter.bounds:
        lo, hi = registry.bounds_of(chapter, name)  # an open end of a timeout or a count is the platform's bound
        return f"  in [{'-∞' if lo is None else lo}, {'∞' if hi is None else hi}]"
    if name in chapter.choices:
        return "  one of " + ", ".join(map(str, chapter.choices[name]))
    return ""


def _run(args: argparse.Namespace) -> None:
    overrides = dict(args.param or [])
    params = runner.run_parameters(args.chapter, overrides, args.quick)  # fail before a kernel starts
    uses_llm = any(params[k] not in registry.UNSET for k in registry.provider_parameters(params))
    before = _llm_cache_totals() if uses_llm else None
    out = runner.run_chapter(args.chapter, overrides, quick=args.quick, show_progress=_on_terminal())
    if before is not None:
        after = _llm_cache_totals()
        hits, misses = (after[k] - before[k] for k in ("hits", "misses"))
        print(f"LLM cache: +{hits} hits, +{misses} misses (model calls)", file=sys.stderr)
    print(out)
    if build.missing_pages():  # a scratch book folder: build alone would refuse
        hint = "to see it as a page: rcakit book (runs the pages this book folder lacks, keeps this rerun)"
    else:
        hint = "to see it as a page: rcakit build (keeps this rerun; rcakit book --defaults restores the defaults)"
    print(hint, file=sys.stderr)


def _llm_cache_totals() -> dict[str, Any]:
    """The response cache's cross-process counters (the chapter runs in a kernel)."""
    from rcakit.llm import cache_totals

    return cache_totals()


def _book(args: argparse.Namespace) -> None:
    """Re-execute each page that is missing or stale, then build the HTML.

    A page is re-executed with the parameters it was last run with (a user's
    rerun survives), unless ``--defaults`` or ``--quick`` asks for those
    values; one whose source, code, data and parameters are unchanged is
    kept as it is (``rcakit.book.provenance``). Staleness is decided before any
    check: only the pages that will run are preflighted (so a recorded model
    server that is down does not stop a book whose pages are all current),
    and all of them before the first runs.
    """
    from tqdm import tqdm

    from rcakit.book import provenance

    plan = []
    for cid in registry.PAGES:  # staleness first: a page that is up to date needs none of its servers
        chapter = registry.get(cid)
        params = runner.book_parameters(cid, defaults=args.defaults, quick=args.quick)
        reason = provenance.why_stale(chapter, runner.executed_notebook(chapter), params)
        if reason is not None:
            runner.preflight(cid, params)  # every page that will run is checked before any runs
        plan.append((cid, params, reason))
    for cid, params, reason in tqdm(plan, desc="chapters", file=sys.stderr, disable=not _on_terminal()):
        if reason is None:
            print(f"{cid}: up to date", file=sys.stderr)
            continue
        print(f"{cid}: running ({reason})", file=sys.stderr)
        started = time.monotonic()
        runner.run_chapter(cid, params, show_progress=_on_terminal())
        print(f"{cid}: done in {time.monotonic() - started:.0f} s", file=sys.stderr)  # the terminal, never a page
    if not args.no_build:
        _build(args)


def _build(args: argparse.Namespace) -> None:
    for failed in runner.failed_notebooks():
        _say(f"rcakit: note: the latest run of {failed.stem} failed (see {failed}); its page shows the last good run")
    build.refresh_summaries(lambda line: print(line, file=sys.stderr))
    print(build.build())


def _on_terminal() -> bool:
    """Progress bars only on a terminal: piped stderr stays one line per message."""
    return sys.stderr.isatty()


def _validate(args: argparse.Namespace) -> int:
    """Every bad record on its own line on stderr, then the good/bad count on stdout; 2 if any was bad."""
    from rcakit.chapters._checks import validate_records

    n_good, errors = validate_records(args.path, args.format)
    for error in errors:
        _say(f"rcakit: error: {error}")
    sys.stderr.flush()
    print(f"{args.path}: {n_good} good records, {len(errors)} bad")
    return 2 if errors else 0


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="rcakit", description="Causal failure attribution workbench.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("list", help="chapters and their parameters").set_defaults(func=_list)
    run = sub.add_parser("run", help="rerun one chapter with new parameters")
    run.add_argument("chapter")
    run.add_argument(
        "-p",
        "--param",
        nargs=2,
        action="append",
        metavar=("NAME", "VALUE"),
        help="set a parameter; VALUE may start with '-' (-p q -1e-3)",
    )
    run.add_argument("--quick", action="store_true", help="start from the chapter's quick values")
    run.set_defaults(func=_run)
    book_parser = sub.add_parser("book", help="run the chapters that are missing or stale, then build the HTML")
    values = book_parser.add_mutually_exclusive_group()
    values.add_argument("--defaults", action="store_true", help="run every chapter at its default parameters")
    values.add_argument("--quick", action="store_true", help="run every chapter at its quick values")
    book_parser.add_argument("--no-build", action="store_true", help="run the chapters only")
    book_parser.add_argument("--no-run", dest="no_run", action="store_true", help="only build (same as rcakit build)")
    book_parser.set_defaults(func=lambda a: _build(a) if a.no_run else _book(a))
    build_help = "build the HTML from the executed chapters present (the summary pages rerun when results changed)"
    sub.add_parser("build", help=build_help).set_defaults(func=_build)
    val = sub.add_parser("validate", help="check LongRCA records or Who&When logs (file or folder)")
    val.add_argument("path")
    val.add_argument("--format", default="auto", help="auto, longrca or who_and_when")
    val.set_defaults(func=_validate)
    from rcakit.data import add_commands  # `rcakit data list|fetch NAME|verify NAME|path NAME`

    add_commands(sub)
    return p


def split_params(argv: list[str]) -> tuple[list[str], list[tuple[str, str]] | None]:
    """Take each ``-p NAME VALUE`` out of ``argv`` verbatim, whatever VALUE holds.

    argparse reads a token that starts with ``-`` and is not a plain negative
    number (``-1e-3``, ``-inf``) as an option, so ``-p q -1e-3`` would fail
    with "expected 2 arguments". The two tokens after each ``-p``/``--param``
    (after the ``run`` command) are therefore taken here, and checked by the
    chapter's validator like any other value.
    """
    if "run" not in argv:
        return argv, None
    start = argv.index("run") + 1
    rest, params, i = argv[:start], [], start
    while i < len(argv):
        if argv[i] in ("-p", "--param"):
            if i + 2 >= len(argv):
                raise RcakitError("argument -p/--param: expected 2 arguments (see 'rcakit --help')")
            if any(name == argv[i + 1] for name, _ in params):
                raise RcakitError(f"parameter {argv[i + 1]!r} is given twice; give each -p once")
            params.append((argv[i + 1], argv[i + 2]))
            i += 3
        else:
            rest.append(argv[i])
            i += 1
    return rest, params


ASCII = {"∞": "inf", "−": "-", "–": "-", "—": "--", "…": "...", "≤": "<=", "≥": ">=", "×": "x", "’": "'"}


def _ascii_fallback(err: UnicodeError) -> tuple[str, int]:
    """A codec error handler: what a stream cannot encode, in ASCII (``∞`` as ``inf``, else ``\\u221e``)."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    bad = err.object[err.start : err.end]
    return "".join(ASCII.get(c, c.encode("ascii", "backslashreplace").decode()) for c in bad), err.end


def degrade_streams() -> None:
    """stdout and stderr never fail on a character their encoding lacks (``PYTHONIOENCODING=ascii``, a C locale):
    it is written in ASCII instead."""
    import codecs

    codecs.register_error("rcakit-ascii", _ascii_fallback)
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", "strict") == "strict":
            reconfigure(errors="rcakit-ascii")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    degrade_streams()
    absolute_folder_envs()  # the kernel starts in the project root: a relative folder must mean the same there
    staging.catch_termination()  # SIGTERM and SIGHUP unwind every command, its temporary files removed
    try:
        check_source_date_epoch()
        rest, params = split_params(argv)
        args = parser().parse_args(rest)
        if params is not None and args.command == "run":
            args.param = (args.param or []) + params
        status = args.func(args) or 0
    except RcakitError as err:
        return _fail(f"rcakit: error: {err}", 2)
    except runner.ChapterFailed as err:
        return _fail(f"rcakit: {err}", 1)
    except KeyboardInterrupt:
        _quiet_unfinished_tasks()
        return _fail(
            "rcakit: interrupted; finished cases are kept in their stores and the last good "
            "notebooks and results are unchanged",
            130,
        )
    except staging.Terminated as stop:
        _quiet_unfinished_tasks()
        kept = (
            "no partial download was kept"
            if argv[:1] == ["data"]
            else "finished cases are kept in their stores and the last good notebooks and results are unchanged"
        )
        return _fail(f"rcakit: terminated ({stop.name}); {kept}", 128 + stop.signum)
    except BrokenPipeError:  # `rcakit data list | head`: the reader left, which is no error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as err:  # an unreadable file, a folder that vanished
        where = f"{err.filename}: " if err.filename else ""
        return _fail(f"rcakit: error: {where}{err.strerror or err}", 2)
    except (RecursionError, MemoryError) as err:
        return _fail(f"rcakit: error: input too deeply nested or too large ({type(err).__name__})", 2)
    return status


def _quiet_unfinished_tasks() -> None:
    """After a signal ended a run, the kernel client's unfinished asyncio tasks would each print a traceback at
    exit ("Task exception was never retrieved"); the one line rcakit prints says what happened."""
    import logging

    logging.getLogger("asyncio").setLevel(logging.CRITICAL + 1)


def _fail(line: str, status: int) -> int:
    if os.environ.get("RCAKIT_TRACEBACK") and sys.exc_info()[0] is not None:
        import traceback

        traceback.print_exc()
    _say(line)
    return status


def _say(line: str) -> None:
    """``line`` on stderr as one line, whatever newlines the message held."""
    print(" ".join(line.split()), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
