"""rcakit.sections: the one shape a chapter reads from the package."""

from __future__ import annotations

import pandas as pd
import pytest

from rcakit.sections import Section, collect


def test_collect_merges_numbers_and_refuses_a_key_named_twice() -> None:
    a = Section(numbers={"main": {"fem": 1.0}})
    b = Section(numbers={"cost": 3})
    assert collect(a, b) == {"main": {"fem": 1.0}, "cost": 3}
    with pytest.raises(ValueError, match="'main.fem'"):
        collect(a, Section(numbers={"main": {"fem": 0.5}}))


def test_collect_merges_a_shared_key_leaf_by_leaf_without_writing_into_a_section() -> None:
    split = Section(numbers={"interaction": {"phi": [0.4, 0.5]}})
    coverage = Section(numbers={"interaction": {"coverage": {"car": 0.95}}})
    assert collect(split, coverage) == {"interaction": {"phi": [0.4, 0.5], "coverage": {"car": 0.95}}}
    assert split.numbers == {"interaction": {"phi": [0.4, 0.5]}}
    with pytest.raises(ValueError, match="'interaction.coverage.car'"):
        collect(coverage, Section(numbers={"interaction": {"coverage": {"car": 0.9}}}))
    with pytest.raises(ValueError, match="'interaction'"):
        collect(split, Section(numbers={"interaction": 1.0}))


def test_a_skipped_section_records_nothing_and_shows_its_reason() -> None:
    skipped = Section.skip("no Who&When folder was given")
    assert collect(Section(numbers={"x": 1}), skipped) == {"x": 1}
    shown = skipped.show().data  # HTML: myst-nb renders Markdown outputs as CommonMark, where :::{note} is raw text
    assert "no Who&amp;When folder was given" in shown and 'class="admonition note"' in shown
    with pytest.raises(ValueError):
        Section(table=pd.DataFrame({"a": [1]}), skipped="why")
    with pytest.raises(ValueError):
        Section.skip("  ")


def test_show_formats_the_table_with_the_sections_decimals() -> None:
    section = Section(table=pd.DataFrame({"fem": [0.123456]}), decimals=2)
    assert "0.12" in section.show().to_html() and "0.123" not in section.show().to_html()
    with pytest.raises(ValueError):
        Section().show()


def test_a_section_with_a_listing_shows_it_as_markdown_in_place_of_its_table() -> None:
    section = Section(table=pd.DataFrame({"why": ["a long sentence"]}), listing="- **choice**: the why")
    shown = section.show()
    assert shown._repr_markdown_() == "- **choice**: the why"
    assert not hasattr(Section(table=pd.DataFrame({"x": [1.0]})).show(), "_repr_markdown_")  # a table stays one
