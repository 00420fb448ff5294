#!/usr/bin/env bash
# The rollout benchmark's shapiq comparison against today's shapiq (>= 1.8, which needs Python >= 3.12).
# The project itself runs on Python 3.11 (its dense retriever's torch build), so this makes a second
# environment, .venv-shapiq by default, on Python 3.12 with rcakit WITHOUT the book extra (no torch) and
# shapiq >= 1.8, then runs benchmarks/bench_rollouts.py with --shapiq. Arguments go to the benchmark
# (e.g. --quick, --games agent-10 fresh-20). PYTHON312 and SHAPIQ_VENV override the interpreter and folder;
# SHAPIQ_EXTRAS=shapleig adds shapiq's extra for ShaplEIG (torch, gpytorch, botorch: a large download, so
# not by default; without it the benchmark names ShaplEIG as skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON312=${PYTHON312:-python3.12}
if command -v pyenv >/dev/null && [[ -z "${PYENV_VERSION:-}" ]]; then  # pyenv's shim needs the version named
    PYENV_VERSION=$(pyenv versions --bare | grep -E '^3\.12(\.|$)' | tail -n 1 || true)
    export PYENV_VERSION
fi
VENV=${SHAPIQ_VENV:-.venv-shapiq}
STAMP="$VENV/.installed-shapiq"
SHAPIQ="shapiq${SHAPIQ_EXTRAS:+[$SHAPIQ_EXTRAS]}>=1.8"
if [[ ! -f "$STAMP" || pyproject.toml -nt "$STAMP" || "$(cat "$STAMP")" != "$SHAPIQ" ]]; then
    "$PYTHON312" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -e . "$SHAPIQ"
    printf '%s' "$SHAPIQ" > "$STAMP"
fi
"$VENV/bin/python" -c "import shapiq, sys; print(f'shapiq {shapiq.__version__} on Python {sys.version.split()[0]}')"
exec nice -n 10 "$VENV/bin/python" benchmarks/bench_rollouts.py --shapiq "$@"
