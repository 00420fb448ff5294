"""``make lab``: JupyterLab opens the MyST chapters as notebooks, as root and as a user.

``make lab`` runs ``scripts/lab.py``, which writes the project's settings
override into the environment's JupyterLab settings folder and starts
JupyterLab on 127.0.0.1. Here the override is written into a scratch folder
(so the test leaves the environment as it was), a server is started on it on
a free loopback port, and its own APIs are asked what ``make lab`` promises:
the default viewer of Markdown files is the Jupytext notebook, the Jupytext
and MyST extensions are loaded, and ``primer.md`` is served as a notebook
with its parameters cell. With a browser, ``primer.md`` is opened and must
show as a notebook panel. The server is stopped afterwards.
"""

import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from rcakit.paths import project_root

pytest.importorskip("jupyterlab", reason="JupyterLab is in the lab and dev extras (pip install -e '.[dev]')")
pytestmark = pytest.mark.slow

TOKEN = "rcakit-lab-test"
START_DEADLINE = 90.0  # seconds for the server to answer; two loaded cores


def lab_script():
    spec = importlib.util.spec_from_file_location("lab", project_root() / "scripts" / "lab.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return reply.read()


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    """``scripts/lab.py``'s command, with its override in a scratch prefix; yields (base URL, settings file)."""
    lab = lab_script()
    prefix = tmp_path_factory.mktemp("prefix")
    settings = lab.install_overrides(str(prefix))
    port = free_port()
    extra = [
        "--no-browser",
        f"--port={port}",
        f"--IdentityProvider.token={TOKEN}",
        f"--LabApp.app_settings_dir={settings.parent}",
        f"--ServerApp.root_dir={project_root() / 'notebooks'}",
    ]
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path_factory.mktemp("runtime"))}
    server = subprocess.Popen(
        lab.lab_command(extra), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_DEADLINE
    try:
        while True:
            try:
                get(f"{base}/api/status?token={TOKEN}")
                break
            except (urllib.error.URLError, ConnectionError):
                if server.poll() is not None or time.monotonic() > deadline:
                    err = server.stderr.read().decode(errors="replace")[-2000:] if server.stderr else ""
                    pytest.fail(f"JupyterLab did not start (status {server.poll()}):\n{err}")
                time.sleep(0.5)
        yield base, settings
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        with socket.socket() as s:  # the port is free again: nothing was left running
            assert s.connect_ex(("127.0.0.1", port)) != 0


def test_the_command_allows_root_only_as_root_and_listens_on_loopback():
    command = lab_script().lab_command(["--no-browser"])
    assert "--ServerApp.ip=127.0.0.1" in command and command[-1] == "--no-browser"
    assert ("--allow-root" in command) == (os.geteuid() == 0)
    assert Path(command[3]) == project_root() / "notebooks"


def test_the_override_goes_where_jupyterlab_reads_settings(tmp_path):
    from jupyterlab.labapp import LabApp

    lab = lab_script()
    assert lab.settings_folder() == Path(LabApp().app_settings_dir)  # the environment's own folder
    written = lab.install_overrides(str(tmp_path))
    assert written == lab.settings_folder(str(tmp_path)) / "overrides.json"
    viewers = json.loads(written.read_text())["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers["markdown"] == "Jupytext Notebook"
    assert [p.name for p in written.parent.iterdir()] == ["overrides.json"]  # no temporary file left


def test_the_server_makes_jupytext_the_default_viewer_and_serves_the_primer_as_a_notebook(lab_server):
    base, _ = lab_server
    plugin = json.loads(get(f"{base}/lab/api/settings/@jupyterlab/docmanager-extension:plugin?token={TOKEN}"))
    default = plugin["schema"]["properties"]["defaultViewers"]["default"]
    assert default.get("markdown") == "Jupytext Notebook", default
    page = get(f"{base}/lab?token={TOKEN}").decode()
    config = json.loads(re.search(r'id="jupyter-config-data"[^>]*>(.*?)</script>', page, re.S).group(1))
    loaded = {e["name"] for e in config.get("federated_extensions", [])}
    assert {"jupyterlab-jupytext", "jupyterlab-myst"} <= loaded, loaded
    model = json.loads(get(f"{base}/api/contents/primer.md?type=notebook&content=1&token={TOKEN}"))
    cells = model["content"]["cells"]
    assert model["type"] == "notebook" and len(cells) > 20
    assert any("parameters" in c["metadata"].get("tags", []) for c in cells if c["cell_type"] == "code")


def test_the_primer_opens_as_a_notebook_panel_in_a_browser(lab_server):
    chromium = shutil.which("chromium")
    if chromium is None:
        if os.environ.get("RCAKIT_REQUIRE_BROWSER") == "1":
            pytest.fail("RCAKIT_REQUIRE_BROWSER=1 but no chromium")
        pytest.skip("no chromium (Debian: apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    from support.browser import LAUNCH_FLAGS

    base, _ = lab_server
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=LAUNCH_FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(120_000)
        page.goto(f"{base}/lab/tree/primer.md?token={TOKEN}")
        page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell")
        assert page.locator(".jp-NotebookPanel").count() == 1
        assert page.locator(".jp-FileEditor").count() == 0  # not the text editor
        browser.close()
