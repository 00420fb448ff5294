"""What the tests share: fake servers, the bad-input table, quick runs, page and reader checks.

``ROOT`` is the project, ``TESTS`` this tests folder, ``FIXTURES`` the invented
data files under ``tests/fixtures``.
"""

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
FIXTURES = TESTS / "fixtures"
