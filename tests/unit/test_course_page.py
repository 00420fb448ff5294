"""scripts/course_page.py: the course page's measured table is what the script computes now."""

from __future__ import annotations

import importlib.util

from rcakit.paths import project_root


def _script():
    spec = importlib.util.spec_from_file_location("course_page", project_root() / "scripts" / "course_page.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_course_page_table_is_up_to_date_and_lists_every_chapter_with_a_run_time():
    course = _script()
    assert course.main(["--check"]) == 0
    table = course.table()
    assert table.count("\n") == 1 + len(course.CHAPTERS) and "—" not in table  # every chapter has a run time


def test_reading_time_counts_prose_not_code_math_or_front_matter():
    course = _script()
    words = " ".join(["word"] * 200)
    source = f"---\ntitle: x\n---\n{words}\n\n```{{code-cell}} ipython3\n{words}\n```\n\n$$\n{words}\n$$\n"
    assert course.reading_minutes(source) == 1
    assert course.reading_minutes(source + "one more") == 2
