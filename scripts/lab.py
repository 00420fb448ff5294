"""JupyterLab on the chapters, opened as notebooks: the body of ``make lab``.

Usage: ``python scripts/lab.py [JUPYTER LAB OPTIONS ...]``

First the project's settings override (``scripts/jupyterlab-overrides.json``:
the Jupytext notebook viewer is the default for ``.md`` files) is written into
this environment's JupyterLab settings folder, ``<prefix>/share/jupyter/lab/settings``,
where JupyterLab reads it at start. Then JupyterLab starts on 127.0.0.1 in
``notebooks/``, with ``--allow-root`` when run as root (JupyterLab refuses
root without it). Extra options go to ``jupyter lab`` unchanged, so
``make lab LAB_ARGS="--no-browser --port 8890"`` works.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OVERRIDES = ROOT / "scripts" / "jupyterlab-overrides.json"


def settings_folder(prefix: str = sys.prefix) -> Path:
    """The folder JupyterLab reads ``overrides.json`` from in the environment at ``prefix``."""
    return Path(prefix) / "share" / "jupyter" / "lab" / "settings"


def install_overrides(prefix: str = sys.prefix) -> Path:
    """Write the project's overrides into ``prefix``'s settings folder (a temporary file, then a rename)."""
    sys.path.insert(0, str(ROOT))
    from rcakit.io import atomic_write

    target = settings_folder(prefix) / "overrides.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, OVERRIDES.read_text(encoding="utf-8"))
    return target


def lab_command(extra: list[str]) -> list[str]:
    """The ``jupyter lab`` command line: the chapters' folder, loopback only, root allowed when needed."""
    command = [sys.executable, "-m", "jupyterlab", str(ROOT / "notebooks"), "--ServerApp.ip=127.0.0.1"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    return command + extra


def main(argv: list[str]) -> None:
    install_overrides()
    command = lab_command(argv)
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
