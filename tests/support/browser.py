"""Headless Chromium as the browser and JupyterLab tests launch it: offline, no sandbox, no GPU."""

LAUNCH_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
