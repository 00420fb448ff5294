"""Issue 48, item 4 (D08, D09, D12, D17, D19): every file rcakit reads goes through one reader
(``rcakit.io.read_text``, ``rcakit.io.read_yaml``): size cap, UTF-8, ``safe_load`` with a limit on aliases
(counted as what they expand to) and on depth, each fault one line naming the file; then the file's schema:
the data registry (``rcakit data list`` and a chapter's preflight), ``data/claims.yaml`` (checked in the
preflight, not in the kernel) and the values a verdict is given on (``rcakit.results.measured_value``)."""

from __future__ import annotations

import shutil

import pytest

from rcakit import RcakitError
from rcakit.book import inputs
from rcakit.claims import ledger
from rcakit.data import catalog
from rcakit.io import MAX_DEPTH, YAML_MAX_NODES, read_text, read_yaml
from rcakit.results import measured_value
from support import ROOT

LAUGHS = b"a: &a [x, x, x, x, x, x, x, x, x]\n" + b"".join(
    b"%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n" % ((98 + i,) * 2 + (97 + i,) * 9) for i in range(20)
)
BAD_YAML = {
    "a syntax error": (b"tiny: {files: [1, 2\n", "is not valid YAML: "),
    "a python tag": (b"tiny: !!python/object/apply:os.system ['echo planted']\n", "is not valid YAML: "),
    "a byte that is not UTF-8": (b"tiny: \xff\n", "is not UTF-8 text (byte 6)"),
    "a billion laughs": (LAUGHS, f"expands to more than {YAML_MAX_NODES:,} YAML nodes"),
    "nesting 200 deep": (b"a: " + b"[" * 200 + b"]" * 200 + b"\n", f"is nested more than {MAX_DEPTH} levels deep"),
    "a list, not a mapping": (b"- tiny\n", "the data registry must map names to entries"),
}


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    monkeypatch.setenv("RCAKIT_ROOT", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("case", list(BAD_YAML))
def test_a_malformed_data_registry_is_one_line_naming_the_file(project, case):
    content, words = BAD_YAML[case]
    path = project / "data" / "registry.yaml"
    path.write_bytes(content)
    with pytest.raises(RcakitError) as info:
        catalog.registry()
    message = str(info.value)
    assert message.startswith(f"{path}: ") and words in message and "\n" not in message, message
    from rcakit.data.cli import _cli_list  # rcakit data list: the same line (the CLI prints it, exit 2)

    with pytest.raises(RcakitError) as again:
        _cli_list(None)
    assert str(again.value) == message


def test_the_readers_cap_size_and_read_the_projects_own_files(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: 1\n" * 100)
    with pytest.raises(RcakitError, match=r"big.yaml: this registry is 500 bytes, more than the 100 rcakit reads$"):
        read_text(big, "registry", max_bytes=100)
    with pytest.raises(RcakitError, match=r"nothing.yaml: cannot read this registry: No such file or directory$"):
        read_yaml(tmp_path / "nothing.yaml", "registry")
    assert read_yaml(big) == {"a": 1}
    assert read_yaml(ROOT / "data" / "claims.yaml")  # the real files pass, anchors and all
    assert read_yaml(ROOT / "data" / "registry.yaml")


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"car-shapley: [1, 2\n", "is not valid YAML"),
        (b"car-shapley: !!python/name:os.system ''\n", "is not valid YAML"),
        (b"- car-shapley\n", "the claims file must map chapter ids to sections, got list"),
        (b"car-shapley: 3\n", "'car-shapley': expected a chapter id mapped to a section"),
        (b"car-shapley: {claims: {a: 1}}\n", "'car-shapley': claims must be a list of mappings"),
        (b"car-shapley: {claims: [{claim: x, kind: guess}]}\n", "unknown kind 'guess'"),
    ],
)
def test_a_malformed_claims_file_is_found_in_the_preflight(project, monkeypatch, content, words):
    """Before, a malformed data/claims.yaml was found in the kernel, at the end of a run, file not named (D19)."""
    path = project / "data" / "claims.yaml"
    path.write_bytes(content)
    monkeypatch.setattr(ledger, "claims_path", lambda: path)
    with pytest.raises(RcakitError) as info:
        inputs.check_claims_file()
    assert words in str(info.value) and "claims" in str(info.value) and "\n" not in str(info.value)


def test_the_projects_claims_file_passes_the_preflight(tmp_path, monkeypatch):
    path = tmp_path / "claims.yaml"
    shutil.copy(ROOT / "data" / "claims.yaml", path)
    monkeypatch.setattr(ledger, "claims_path", lambda: path)
    inputs.check_claims_file()


@pytest.mark.parametrize("value", ["1", True, False, {"a": 1}, ["1", 2]])
def test_a_results_value_of_the_wrong_type_is_an_error_not_a_verdict(value):
    """Before, "1" read *differs* and true read *agrees* against ``== 1`` (D12)."""
    with pytest.raises(RcakitError, match=r"^results: x.y holds .*, not a number; rcakit writes numbers there"):
        measured_value({"x": {"y": value}}, "x.y")


def test_numbers_none_and_intervals_are_values():
    tree = {"a": 1, "b": 0.5, "c": None, "d": [0.1, 0.9], "e": [None, 2]}
    assert [measured_value(tree, k) for k in "abcde"] == [1, 0.5, None, [0.1, 0.9], [None, 2]]
