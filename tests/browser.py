"""Debian's headless Chromium as a test's browser, driven over the DevTools protocol.

One Chromium process (a new empty profile, deleted afterwards) renders page after page in one tab,
so the web app's JavaScript is fetched and compiled once, not once per page. For each page it
navigates, waits until the page's text shows what the test expects (or a deadline passes: the
test's assertions then fail with the screenshot to look at), and keeps the PNG and the rendered DOM.
"""

from __future__ import annotations

import base64
import itertools
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

import requests
from websockets.sync.client import connect

logger = logging.getLogger(__name__)

CHROMIUM = "/usr/bin/chromium"
# Where a test run copies its screenshots, besides the test's own tmp directory (e.g. a CI artifact dir).
ARTIFACTS_ENV = "TIDEMARK_UI_ARTIFACTS"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,900", "--remote-debugging-port=0", "--remote-allow-origins=*"]


@dataclass(frozen=True)
class Page:
    url: str
    dom: str
    screenshot: Path

    @property
    def text(self) -> str:
        """The page's text: tags removed, entities decoded, whitespace collapsed."""
        body = re.sub(r"<(script|style)\b.*?</\1>", " ", self.dom, flags=re.S | re.I)
        return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", body)))

    @property
    def drawn(self) -> list[str]:
        """The text of each box a Dagster graph draws (its SVG's ``foreignObject`` elements: asset
        nodes, links and group boxes), in the DOM's order. The graph draws only what is on screen."""
        boxes = re.findall(r"<foreignObject\b[^>]*>(.*?)</foreignObject>", self.dom, flags=re.S | re.I)
        return [re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", box))).strip() for box in boxes]


def chromium_missing() -> str | None:
    """Why the browser cannot run here, or None."""
    if not Path(CHROMIUM).is_file():
        return f"{CHROMIUM} is missing: install the Debian package `chromium` (make setup does)"
    return None


class Browser:
    """A headless Chromium with one tab; ``render`` loads a page and keeps its screenshot and DOM."""

    def __init__(self, out_dir: Path, start_timeout_s: float = 60.0):
        self.out_dir = Path(out_dir)
        self.start_timeout_s = start_timeout_s
        self._ids = itertools.count(1)
        self._profile = Path(tempfile.mkdtemp(prefix="tidemark-chromium-"))
        self._proc: subprocess.Popen | None = None
        self._ws: Any = None
        self._stack = ExitStack()

    def __enter__(self) -> Browser:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        log = self._stack.enter_context(open(self.out_dir / "chromium.log", "wb"))
        self._proc = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        port_file = self._profile / "DevToolsActivePort"
        deadline = time.monotonic() + self.start_timeout_s
        while not (port_file.is_file() and port_file.read_text().strip()):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError(f"chromium did not start (exit {self._proc.returncode}); "
                                   f"see {self.out_dir / 'chromium.log'}")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        tabs = requests.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json()
        page = next(t for t in tabs if t.get("type") == "page")
        self._ws = self._stack.enter_context(connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=10))
        self._call("Page.enable")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._stack.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def _call(self, method: str, **params: Any) -> dict[str, Any]:
        call_id = next(self._ids)
        self._ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv(timeout=60))
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"chromium refused {method}: {message['error']}")
                return message.get("result", {})

    def _text(self) -> str:
        result = self._call("Runtime.evaluate", expression="document.body ? document.body.innerText : ''",
                            returnByValue=True)
        return str(result.get("result", {}).get("value") or "")

    def _drawn(self) -> str:
        result = self._call("Runtime.evaluate", returnByValue=True, expression=(
            "Array.from(document.querySelectorAll('foreignObject')).map(e => e.textContent).join('\\n')"))
        return str(result.get("result", {}).get("value") or "")

    def render(self, url: str, name: str, wait_for: Sequence[str] = (), timeout_s: float = 30.0,
               wait_gone: Sequence[str] = (), drawn: Sequence[str] = ()) -> Page:
        """Load ``url``; once every string of ``wait_for`` is on the page, every one of ``drawn`` in the
        boxes a graph draws (``Page.drawn``: the page's sidebar may name them before the graph is laid
        out) and none of ``wait_gone`` (e.g. a "Loading..." placeholder) is on the page or in a box (or
        ``timeout_s`` passed) and the page had a moment to settle, keep ``<name>.png`` and ``<name>.html``."""
        self._call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            # the body's innerText leaves out what an SVG's foreignObject holds (a graph's boxes)
            text, boxes = self._text(), self._drawn()
            if (text and all(w in text for w in wait_for) and all(w in boxes for w in drawn)
                    and not any(w in text or w in boxes for w in wait_gone)):
                break
            time.sleep(0.25)
        else:
            logger.warning("%s: still missing %s (or showing %s) after %.0f s", url,
                           [w for w in wait_for if w not in text] + [w for w in drawn if w not in boxes],
                           [w for w in wait_gone if w in text or w in boxes], timeout_s)
        time.sleep(0.5)  # the last requests' results land (counts, badges) before the picture is taken
        shot = self.out_dir / f"{name}.png"
        shot.write_bytes(base64.b64decode(self._call("Page.captureScreenshot", format="png")["data"]))
        dom = self._call("Runtime.evaluate", expression="document.documentElement.outerHTML",
                         returnByValue=True)["result"]["value"]
        (self.out_dir / f"{name}.html").write_text(dom)
        copy_to = os.environ.get(ARTIFACTS_ENV)
        if copy_to:
            Path(copy_to).mkdir(parents=True, exist_ok=True)
            shutil.copy2(shot, Path(copy_to) / shot.name)
        return Page(url, dom, shot)
