"""Issue 48, item 6: the environment a user runs rcakit in never breaks it: a stream that is not UTF-8 (D07),
a ``SOURCE_DATE_EPOCH`` that Sphinx cannot date (D18), a umask (D13). Each as a real process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rcakit import RcakitError
from rcakit.paths import LAST_EPOCH, check_source_date_epoch

pytestmark = pytest.mark.slow  # real rcakit processes


def rcakit(*args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("RCAKIT_TRACEBACK", "SOURCE_DATE_EPOCH")}
    return subprocess.run(
        [sys.executable, "-m", "rcakit", *args], env={**environ, **env}, capture_output=True, text=True, timeout=300
    )


def test_rcakit_list_degrades_to_ascii_on_a_stream_that_is_not_utf8():
    """Before, the ∞ of a seed's bound was a UnicodeEncodeError traceback under PYTHONIOENCODING=ascii."""
    proc = rcakit("list", PYTHONIOENCODING="ascii")
    assert proc.returncode == 0, proc.stderr
    assert "seed = 0  in [0, inf]" in proc.stdout and proc.stdout.isascii() and proc.stderr == ""
    bad = rcakit("run", "car-shapley", "-p", "q", "∞", PYTHONIOENCODING="ascii")  # an error line with a non-ASCII value
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1 and "Traceback" not in bad.stderr, bad.stderr


@pytest.mark.parametrize("raw", ["12345678901234567890", str(LAST_EPOCH + 1)])
def test_a_source_date_epoch_past_the_year_9999_is_one_line_before_anything_runs(raw):
    """Before, 20 digits passed rcakit's check and the build failed with "Look above for the cause"."""
    with pytest.raises(RcakitError, match=r"^SOURCE_DATE_EPOCH: \d+ is past the year 9999 \(at most 253402300799\)$"):
        check_source_date_epoch({"SOURCE_DATE_EPOCH": raw})
    check_source_date_epoch({"SOURCE_DATE_EPOCH": str(LAST_EPOCH)})
    proc = rcakit("list", SOURCE_DATE_EPOCH=raw)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"rcakit: error: SOURCE_DATE_EPOCH: {raw} is past the year 9999 (at most {LAST_EPOCH})"
    ]


def test_a_new_file_honours_the_umask(tmp_path):
    """Before, every file rcakit wrote was 0644, under umask 077 too."""
    code = (
        "import os, sys; os.umask(0o077); from rcakit.io import atomic_write; "
        "atomic_write(sys.argv[1], 'x'); print(oct(os.stat(sys.argv[1]).st_mode & 0o777))"
    )
    made = subprocess.run([sys.executable, "-c", code, str(tmp_path / "new.json")], capture_output=True, text=True)
    assert made.stdout.strip() == "0o600", made.stderr
    kept = tmp_path / "kept.json"
    kept.write_text("old")
    kept.chmod(0o640)
    subprocess.run([sys.executable, "-c", code, str(kept)], capture_output=True, text=True, check=True)
    assert kept.stat().st_mode & 0o777 == 0o640  # a file that was there keeps its mode
