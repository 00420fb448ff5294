"""Tests for rcakit.llm.prompts: one clip, one way to fit a prompt to a budget."""

from __future__ import annotations

import pytest

from rcakit import RcakitError
from rcakit.llm.prompts import (
    MIN_CHARS,
    RETRY_TOKENS,
    Block,
    Budget,
    Fitted,
    PromptTooLong,
    chat_messages,
    clip,
    is_clipped,
    largest,
    render,
)
from support.llm_servers import ScriptedProvider


def provider(window: int | None) -> ScriptedProvider:
    model = ScriptedProvider()
    model.context_window = window
    return model


def build(parts: list[str]) -> list[dict]:
    return chat_messages("sys", "Question?\n" + "\n\n".join(parts))


def test_clip_keeps_the_head_and_names_what_it_cut():
    assert clip("abcdefghij", 4) == "abcd …[6 more characters cut]"
    assert clip("abcd", 4) == "abcd" and clip("abcd", None) == "abcd"
    assert is_clipped("abcde", 4) and not is_clipped("abcd", 4) and not is_clipped("abcde", None)


def test_render_leaves_out_items_from_the_end_it_does_not_keep():
    items = tuple((f"[{i}] x", f"text {i}") for i in range(5))
    head = render(Block(items), None, 2)
    full = "not shown: the prompt budget is full]"
    assert head.splitlines() == ["[0] x: text 0", "[1] x: text 1", f"[3 items ([2] to [4]) {full}"]
    tail = render(Block(items, keep="tail"), 3, 1)
    assert tail.splitlines() == [f"[4 items ([0] to [3]) {full}", "[4] x: tex …[3 more characters cut]"]
    assert render(Block(items), None, None).count("\n") == 4


def test_a_block_keeps_only_head_or_tail():
    with pytest.raises(RcakitError, match="keep"):
        Block((), keep="middle")


def test_largest_bisects_to_the_last_true_value():
    calls = []

    def ok(v):
        calls.append(v)
        return v <= 37

    assert largest(0, 1000, ok) == 37 and len(calls) <= 12
    assert largest(5, 9, lambda v: False) is None
    assert largest(5, 9, lambda v: True) == 9


def test_budget_takes_the_smaller_of_the_cap_and_the_window_less_reply_and_retry():
    assert Budget(provider(1000), 32).limit == 1000 - 2 * 32 - RETRY_TOKENS
    assert Budget(provider(1000), 32, prompt_tokens=200).limit == 200
    assert Budget(provider(None), 32, prompt_tokens=200).limit == 200
    assert Budget(provider(None), 32).limit is None


def test_fit_returns_the_whole_prompt_when_it_fits():
    blocks = [Block((("[0] a", "short"),))]
    fitted = Budget(provider(None), 32).fit(blocks, build)
    assert fitted == Fitted(build(["[0] a: short"])) and not fitted.cut and fitted.clipped(blocks) == 0


def test_fit_clips_to_the_largest_common_length_that_fits():
    model = provider(600)
    budget = Budget(model, 16)
    blocks = [Block(tuple((f"[{i}] a", "w " * 200) for i in range(4))), Block((("[9] b", "short"),))]
    fitted = budget.fit(blocks, build)
    assert fitted.cut and fitted.shown is None and MIN_CHARS <= fitted.cap < 400
    assert budget.fits(fitted.messages) and not budget.fits(build([render(b, fitted.cap + 1, None) for b in blocks]))
    assert fitted.clipped(blocks) == 4 and "more characters cut]" in fitted.messages[-1]["content"]


def test_fit_leaves_items_out_when_clipping_is_not_enough_and_fails_on_the_question_alone():
    budget = Budget(provider(400), 16)
    blocks = [Block(tuple((f"[{i}] a", "w " * 50) for i in range(200)))]
    fitted = budget.fit(blocks, build)
    assert fitted.cap == MIN_CHARS and 0 < fitted.shown < 200 and budget.fits(fitted.messages)
    assert f"items ([{fitted.shown}] to [199]) not shown" in fitted.messages[-1]["content"]
    tiny = Budget(provider(None), 16, prompt_tokens=3)
    with pytest.raises(PromptTooLong, match="too small for the question itself"):
        tiny.fit(blocks, build)
