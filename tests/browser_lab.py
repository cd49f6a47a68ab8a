"""What tests/test_browser.py needs around the browser: a throw-away JupyterLab server and the page scripts.

The server serves copies of the notebooks from a temporary folder, bound to 127.0.0.1 on a free port,
with no token, its own config, data, runtime, settings and workspace folders, and
``--LabApp.expose_app_in_browser`` so the page scripts reach JupyterLab's own commands and notebook model
through ``window.jupyterapp``. Extensions installed in ``sys.prefix`` (the ipywidgets manager) still load:
JupyterLab finds them on its environment data path, which the throw-away folders do not replace.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

#: Where Debian's chromium package puts the browser (override with BROWSER_TEST_CHROMIUM).
CHROMIUM = os.environ.get("BROWSER_TEST_CHROMIUM", "/usr/bin/chromium")

#: User settings for the throw-away JupyterLab: every cell in the DOM (no virtual scrolling), so widgets,
#: figures and the full-page screenshot see the whole notebook, which ends at its last cell; nothing saved on
#: its own; no news prompt over the page.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none", "scrollPastEnd": False},
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}


def missing_browser() -> str | None:
    """Why the browser test cannot run here (what is missing and how to get it), or None when it can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return (
            "Playwright for Python is not installed: run `make test` (it installs the test extra) or "
            "`.venv/bin/pip install -e '.[test]'`"
        )
    if not os.access(CHROMIUM, os.X_OK):
        return (
            f"no browser at {CHROMIUM}: install Debian's chromium package (`apt-get install chromium`, as root; "
            "`make test` does this when it runs as root with apt-get), or point BROWSER_TEST_CHROMIUM at a "
            "Chromium binary. Playwright's own browser download is not used"
        )
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LabServer:
    """JupyterLab on copies of ``notebooks`` in ``workdir``; use as a context manager.

    Attributes:
        url: the server's base URL (``http://127.0.0.1:PORT``).
        notebook_dir: the folder the server serves (the copies).
        log: the server's log file.
    """

    def __init__(self, notebooks: Path, workdir: Path, log: Path):
        self.workdir = workdir
        self.notebook_dir = workdir / "notebooks"
        shutil.copytree(notebooks, self.notebook_dir, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        self.log = log
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = None

    def _environment(self) -> dict:
        env = dict(os.environ)
        folders = {
            "JUPYTER_CONFIG_DIR": "config",
            "JUPYTER_DATA_DIR": "data",
            "JUPYTER_RUNTIME_DIR": "runtime",
            "JUPYTERLAB_SETTINGS_DIR": "settings",
            "JUPYTERLAB_WORKSPACES_DIR": "workspaces",
            "IPYTHONDIR": "ipython",
        }
        for variable, name in folders.items():
            path = self.workdir / name
            path.mkdir(parents=True, exist_ok=True)
            env[variable] = str(path)
        for plugin, values in LAB_SETTINGS.items():
            target = self.workdir / "settings" / f"{plugin}.jupyterlab-settings"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(values))
        return env

    def __enter__(self) -> "LabServer":
        command = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            "--IdentityProvider.token=",
            "--ServerApp.password=",
            f"--ServerApp.root_dir={self.notebook_dir}",
            "--LabApp.expose_app_in_browser=True",
        ]
        if os.getuid() == 0:
            command.append("--allow-root")
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("w") as log:
            # A session of its own, so stopping it also stops the kernels it started.
            self.process = subprocess.Popen(
                command,
                cwd=self.notebook_dir,
                env=self._environment(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.process.returncode}; see {self.log}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status", timeout=2):
                    return self
            except OSError:
                time.sleep(0.5)
        self.__exit__(None, None, None)
        raise RuntimeError(f"JupyterLab did not answer on {self.url} within 90 s; see {self.log}")

    def __exit__(self, *exc) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


# -- page scripts (run with page.evaluate; they use only JupyterLab's public commands and models) -------------

#: Open a notebook, clear every output, Run All, and wait until the kernel is idle and no cell is queued.
#: Returns {ok, cleared_outputs, seconds, timed_out}. Uses the notebook panel as `window.__testPanel`.
RUN_ALL = """
async ({path, timeoutMs}) => {
  const app = window.jupyterapp;
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
  window.__testPanel = panel;
  await panel.context.ready;
  await panel.sessionContext.ready;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  if (!kernel) throw new Error('no kernel started for ' + path);
  await kernel.info;
  app.shell.activateById(panel.id);
  await app.commands.execute('notebook:clear-all-cell-outputs');
  const cells = panel.content.model.cells;
  let cleared = 0;
  for (let i = 0; i < cells.length; i++) {
    const cell = cells.get(i);
    if (cell.type === 'code') cleared += cell.outputs.length;
  }
  const start = performance.now();
  const ran = app.commands.execute('notebook:run-all-cells');
  const timeout = sleep(timeoutMs).then(() => 'timeout');
  const ok = await Promise.race([ran, timeout]);
  // Run All resolves when the last reply arrives; wait as well for the kernel to be idle (displays,
  // widget messages) with no cell queued or running, for half a second in a row.
  let quiet = 0;
  while (quiet < 5 && performance.now() - start < timeoutMs) {
    const busy = kernel.status !== 'idle' ||
      Array.from(panel.node.querySelectorAll('.jp-InputPrompt')).some(p => p.textContent.includes('*'));
    quiet = busy ? 0 : quiet + 1;
    await sleep(100);
  }
  return {ok: ok === true, timed_out: ok === 'timeout' || quiet < 5, cleared_outputs: cleared,
          seconds: (performance.now() - start) / 1000};
}
"""

#: Wait (up to timeoutMs) until no widget output still says "Loading widget...".
WAIT_FOR_WIDGETS = """
async (timeoutMs) => {
  const start = performance.now();
  while (performance.now() - start < timeoutMs) {
    if (!window.__testPanel.node.innerText.includes('Loading widget...')) return true;
    await new Promise(r => setTimeout(r, 100));
  }
  return false;
}
"""

#: The notebook as JupyterLab's model holds it now (nbformat JSON), and for every output what the page shows:
#: [cell index, output index, {widget, widget_error, widget_height, images, images_loaded, svgs}]. Every output
#: node gets a data-test-output="CELL:OUTPUT" attribute for later locators.
READ_NOTEBOOK = """
() => {
  const panel = window.__testPanel;
  const outputs = [];
  panel.content.widgets.forEach((cell, i) => {
    if (cell.model.type !== 'code') return;
    cell.outputArea.widgets.forEach((child, j) => {
      child.node.setAttribute('data-test-output', i + ':' + j);
      const node = child.node.querySelector('.jp-OutputArea-output') || child.node;
      const widget = node.querySelector(':scope > .jupyter-widgets, :scope.jupyter-widgets');
      const images = Array.from(node.querySelectorAll('img'));
      outputs.push([i, j, {
        mime: node.getAttribute('data-mime-type'),
        widget: !!widget,
        widget_text: widget ? widget.innerText.slice(0, 300) : '',
        widget_height: widget ? widget.getBoundingClientRect().height : 0,
        widget_error: node.innerText.includes('Error displaying widget')
          || node.innerText.includes('Loading widget...'),
        images: images.length,
        images_loaded: images.filter(im => im.complete && im.naturalWidth > 0).length,
        svgs: node.querySelectorAll('svg').length,
      }]);
    });
  });
  return {notebook: panel.content.model.toJSON(), outputs,
          page_says_error_displaying_widget: document.body.innerText.includes('Error displaying widget')};
}
"""

#: A digest of what a widget output shows as pictures: inline SVG markup and image bytes (blob URLs read back).
PICTURE_DIGEST = """
async (node) => {
  const parts = Array.from(node.querySelectorAll('svg')).map(s => s.outerHTML);
  for (const img of node.querySelectorAll('img')) {
    const src = img.getAttribute('src') || '';
    if (src.startsWith('blob:')) parts.push(await (await fetch(src)).text());
    else parts.push(src);
  }
  const bytes = new TextEncoder().encode(parts.join('\\n'));
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  const hex = Array.from(new Uint8Array(digest)).map(b => b.toString(16).padStart(2, '0')).join('');
  return {pictures: parts.length, digest: hex};
}
"""

#: Make the page as tall as the notebook (simple interface, no side bars) for a full-page screenshot.
#: Returns the height in CSS pixels the viewport needs.
SCREENSHOT_LAYOUT = """
async () => {
  const app = window.jupyterapp;
  app.shell.mode = 'single-document';
  app.shell.collapseLeft();
  app.shell.collapseRight();
  const panel = window.__testPanel;
  app.shell.activateById(panel.id);
  panel.content.activeCellIndex = 0;
  panel.content.deselectAll();
  panel.content.mode = 'command';
  await new Promise(r => setTimeout(r, 300));
  const scroller = window.__testPanel.content.node.querySelector('.jp-WindowedPanel-outer') ||
    window.__testPanel.content.node;
  scroller.scrollTop = 0;
  return Math.ceil(window.innerHeight - scroller.clientHeight + scroller.scrollHeight + 20);
}
"""

#: Shut the notebook's kernel down and close its panel without saving (the copy on disk stays as it was).
CLOSE = """
async () => {
  const panel = window.__testPanel;
  if (!panel) return;
  if (panel.sessionContext.session) await panel.sessionContext.shutdown();
  panel.dispose();
  window.__testPanel = null;
  window.jupyterapp.shell.mode = 'multiple-document';
}
"""
