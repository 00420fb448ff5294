"""A chapter's parameters: a frozen dataclass made from its parameters cell, typed, readable as a mapping."""

import dataclasses
import json
import typing

import pytest

from rcakit.book import registry
from rcakit.params import ChapterParams, field_type, params_class
from rcakit.results import to_jsonable


@pytest.mark.parametrize("chapter_id", registry.PAGES)
def test_check_params_returns_the_chapters_frozen_class_with_the_cells_values_and_types(chapter_id):
    chapter = registry.get(chapter_id)
    params = registry.check_params(chapter_id, chapter.defaults)
    assert isinstance(params, ChapterParams) and dataclasses.is_dataclass(params)
    assert type(params).__name__ == "".join(w.capitalize() for w in chapter_id.split("-")) + "Params"
    assert list(params) == list(chapter.parameters) and dict(params) == chapter.defaults
    assert json.dumps(to_jsonable(params)) == json.dumps(to_jsonable(chapter.defaults))  # recorded byte for byte
    hints = typing.get_type_hints(type(params))
    for name, default in chapter.defaults.items():
        allowed = chapter.choices.get(name)
        if allowed:
            assert typing.get_args(hints[name]) == tuple(allowed), name
        elif default is not None:
            assert isinstance(default, typing.get_origin(hints[name]) or hints[name]), name
    if chapter.parameters:
        name = next(iter(chapter.parameters))
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(params, name, 1)


def test_a_list_default_is_not_shared_and_an_unknown_name_is_a_key_error():
    cls = params_class("toy", {"seed": 0, "ks": [1, 2]}, {})
    a, b = cls(), cls()
    a.ks.append(3)
    assert b.ks == [1, 2] and cls is params_class("toy", {"seed": 0, "ks": [1, 2]}, {})
    with pytest.raises(KeyError):
        a["nope"]


def test_field_types_follow_defaults_and_choices():
    assert field_type(3) is int and field_type(0.5) is float and field_type(True) is bool
    assert field_type([1, 2]) == list[int] and field_type(None) == (str | None)
    assert typing.get_args(field_type("bm25", ["bm25", "dense"])) == ("bm25", "dense")
