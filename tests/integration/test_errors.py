"""Every bad input of a new user, as a real command: one line, the right status, no traceback,
and nothing changed on disk (tests/support/bad_inputs.py lists the cases and tabulates them)."""

import json

import pytest

from rcakit.store import CaseStore
from support.bad_inputs import CASES, can_mount, expected, nobody_can_run, run_case

pytestmark = pytest.mark.slow  # every case is a real rcakit process
MOUNT = can_mount()
NOBODY = nobody_can_run()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_one_line_and_changes_nothing(case, tmp_path):
    if case.mount and not MOUNT:
        pytest.skip("needs a tmpfs mount (root)")
    if case.as_nobody and not NOBODY:
        pytest.skip("the checkout is not readable by other users (under a 0700 folder): nobody cannot run rcakit")
    got = run_case(case, tmp_path)
    assert got.status == case.status, got.lines
    assert len(got.lines) == 1, got.lines
    assert expected(case, tmp_path) in got.lines[0], got.lines
    assert "Traceback" not in got.lines[0]
    assert got.stdout == "" or case.args[0] == "validate"  # validate prints its good/bad summary
    if case.interrupt:  # the sweep's store is consistent: every line a case, the sweep resumes from it
        store = tmp_path / "root" / "store" / "toy.jsonl"
        assert got.changed == ["root/store/toy.jsonl", "running"]  # the sweep's store and its marker
        rows = [json.loads(line) for line in store.read_text().splitlines()]
        assert rows and all(set(r) == {"key", "value"} for r in rows)
        assert len(CaseStore(store)) >= len(rows) - 1
    else:
        assert got.changed == [], got.changed
    for words in case.deadline:  # what ended the wait, not how long the machine took to get there
        assert words in got.lines[0], got.lines
