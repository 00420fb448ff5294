"""Where the project lives: chapter sources, the book, shipped data.

rcakit is used from a clone (``pip install -e .``), so the project root is the
folder above the package unless ``$RCAKIT_ROOT`` says otherwise. Relative paths
given as chapter parameters resolve against it, whatever the kernel's cwd.
The environment that names folders (:data:`FOLDER_ENVS`) and the build date
(``SOURCE_DATE_EPOCH``) is checked here once, by the CLI.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from rcakit import RcakitError


def project_root() -> Path:
    """``$RCAKIT_ROOT`` if set, else the folder that holds the package."""
    env = os.environ.get("RCAKIT_ROOT")
    return Path(env) if env else Path(__file__).resolve().parents[1]


def resolve(path: str | os.PathLike[str]) -> Path:
    """An absolute path; relative ones are taken from the project root."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else project_root() / p


def book_dir() -> Path:
    """``$RCAKIT_BOOK_DIR`` if set (the tests build a scratch copy), else ``<project>/book``."""
    env = os.environ.get("RCAKIT_BOOK_DIR")
    return Path(env) if env else project_root() / "book"


# The folders rcakit reads from the environment. The CLI makes each absolute once, against its own working
# directory, so the kernel (started in the project root) and every subprocess find the same folder.
FOLDER_ENVS = ("RCAKIT_ROOT", "RCAKIT_BOOK_DIR", "RCAKIT_RESULTS_DIR", "RCAKIT_DATA_DIR", "RCAKIT_LLM_CACHE")


def check_source_date_epoch(environ: Mapping[str, str] | None = None) -> None:
    """``SOURCE_DATE_EPOCH``, when set, must be a whole number of seconds >= 0: matplotlib reads it for every
    figure and Sphinx for the page footer, and either fails on anything else with no word of why."""
    raw = (os.environ if environ is None else environ).get("SOURCE_DATE_EPOCH")
    if raw is not None and not (raw.strip().isdigit() and raw.strip().isascii()):
        raise RcakitError(f"SOURCE_DATE_EPOCH: expected a whole number of seconds since 1970, got {raw!r}")
    if raw is not None and int(raw) > LAST_EPOCH:  # Sphinx dates its pages with datetime: the year 9999 at most
        shown = raw.strip() if len(raw.strip()) <= 40 else f"{raw.strip()[:40]}... ({len(raw.strip())} digits)"
        raise RcakitError(f"SOURCE_DATE_EPOCH: {shown} is past the year 9999 (at most {LAST_EPOCH})")


LAST_EPOCH = 253402300799  # 9999-12-31T23:59:59Z: the last second Python's datetime (and so Sphinx) can date


def absolute_folder_envs(environ: dict[str, str] | None = None) -> None:
    """Replace every relative folder of :data:`FOLDER_ENVS` in ``environ`` (``os.environ``) by its absolute path
    (``~`` expanded); an empty value is left as it is."""
    env = os.environ if environ is None else environ
    for name in FOLDER_ENVS:
        value = env.get(name)
        if value:
            env[name] = str(Path(value).expanduser().absolute())
