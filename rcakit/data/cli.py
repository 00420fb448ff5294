"""``rcakit data list | fetch NAME | verify NAME | path NAME``: the named data sets on the command line."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rcakit import RcakitError
from rcakit.data.catalog import data_home, get, is_fetched, local_path, lock_path, registry, size_text
from rcakit.data.download import fetch
from rcakit.data.integrity import verify

_ACTIONS = (
    ("fetch", "download a data set (hashes, sizes and formats checked)"),
    ("verify", "re-hash a fetched data set's files against the registry or its lock file"),
    ("path", "print a fetched data set's local path"),
)


def add_commands(sub: Any) -> None:
    """Add ``rcakit data list | fetch NAME | verify NAME | path NAME`` to the CLI's subparsers ``sub``."""
    group = sub.add_parser("data", help="named data sets: list, fetch, verify, path")
    actions = group.add_subparsers(
        dest="data_command", metavar="{list,fetch,verify,path}", required=True, parser_class=type(group)
    )
    actions.add_parser("list", help="the data sets, their size, licence and whether fetched").set_defaults(
        func=_cli_list
    )
    commands = {"fetch": _cli_fetch, "verify": _cli_verify, "path": _cli_path}
    for name, text in _ACTIONS:
        action = actions.add_parser(name, help=text)
        action.add_argument("name")
        action.set_defaults(func=commands[name])


def _cli_list(args: argparse.Namespace) -> None:
    print(f"data home: {data_home()}")
    for ds in registry().values():
        try:
            state = f"fetched: {local_path(ds.name)}" if is_fetched(ds.name) else "not fetched"
        except RcakitError as err:
            state = f"unusable: {err}"
        print(f"{ds.name}: {ds.title}")
        print(f"    size {size_text(ds)}; licence {ds.licence}; {state}")
        print(f"    {ds.source} at revision {ds.revision}")
        if not ds.pinned:
            print(
                f"    no sha256 pinned here: the first fetch checks each file's size and format and "
                f"records its sha256 in {lock_path(ds)}, later fetches verify against it"
            )
        if ds.licence_note != ds.licence:
            print(f"    {ds.licence_note}")


def _cli_fetch(args: argparse.Namespace) -> None:
    """The licence, citation and lock-file lines come after a successful fetch, never before an error."""
    ds = get(args.name)
    action = "verified against" if lock_path(ds).exists() else "recorded in"
    root = fetch(ds.name, show_progress=sys.stderr.isatty())
    print(f"{ds.name}: {ds.licence_note}; cite: {ds.citation}", file=sys.stderr)
    if not ds.pinned:
        print(
            f"{ds.name}: no sha256 is pinned in the registry; each file's is {action} {lock_path(ds)}", file=sys.stderr
        )
    print(root)


def _cli_verify(args: argparse.Namespace) -> None:
    """One line per file on stdout; one error line and status 2 when any file does not match."""
    ds = get(args.name)
    checks = verify(ds.name)
    for check in checks:
        print(f"{check.path}: {check.problem or 'ok'}")
    bad = [c for c in checks if c.problem]
    if bad:
        sys.stdout.flush()
        raise RcakitError(
            f"{ds.name}: {len(bad)} of {len(checks)} files do not match (first: {bad[0].path}); "
            f"'rcakit data fetch {ds.name}' fetches them anew"
        )


def _cli_path(args: argparse.Namespace) -> None:
    print(local_path(args.name))
