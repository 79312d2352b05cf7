"""The live viz server of ``dagctx watch --viz`` over HTTP (no browser): loopback only,
the page, the event stream, the node panel's data and the state verbs with their
messages; ``--port`` checked like every other argument."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from dagctx.cli import main

pytestmark = pytest.mark.slow


@pytest.fixture
def url(project: Path) -> Iterator[str]:
    """``dagctx watch PROJECT --viz``; yields the page's URL."""
    command = [sys.executable, "-m", "dagctx.cli", "watch", str(project), "--viz"]
    proc = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=os.environ
    )
    try:
        assert proc.stderr is not None
        found = None
        for line in proc.stderr:
            found = re.search(r"dagctx watch: viz page at (http://[\d.:]+/)", line)
            if found:
                break
        assert found, "no URL printed"
        yield found.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def get(address: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(address, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def post(address: str, body: object) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(
        address, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


class TestWatchViz:
    def test_serves_the_live_page_on_the_loopback(self, url: str) -> None:
        assert url.startswith("http://127.0.0.1:")
        status, page = get(url)
        assert status == 200
        assert "id=treemap" in page and '{"live": true}' in page
        with urllib.request.urlopen(url + "events", timeout=30) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            assert stream.readline() == b"event: view\n"
            data = json.loads(stream.readline().decode().removeprefix("data: "))
        assert data["turn"] == 1 and "id=budgetbar" in data["view"]

    def test_node_panel_data_and_verbs(self, url: str) -> None:
        page = get(url)[1]
        node_id = re.search(r'data-node="(text_\d+)" data-label="src/auth.py"', page)
        assert node_id
        status, answer = get(f"{url}api/node/{node_id.group(1)}")
        panel = json.loads(answer)
        assert status == 200 and panel["label"] == "src/auth.py"
        assert [r["state"] for r in panel["renders"]] == ["COLLAPSED", "SUMMARY", "DETAILS", "ALL"]
        assert panel["parents"] and panel["parents"][0]["label"] == "src/"
        status, done = post(f"{url}api/node/{node_id.group(1)}/state", {"state": "collapsed"})
        assert status == 200 and done["ok"] is True and "COLLAPSED" in str(done["message"])
        status, refused = post(f"{url}api/node/{node_id.group(1)}/state", {"state": "huge"})
        assert status == 400 and "Unknown state 'huge'" in str(refused["message"])
        status, hidden = post(f"{url}api/node/{node_id.group(1)}/state", {"state": "hidden"})
        assert status == 200 and "Hid" in str(hidden["message"])
        assert get(f"{url}api/node/nope")[0] == 404
        assert post(f"{url}api/node/nope/state", {"state": "all"})[0] == 400
        assert post(f"{url}api/node/{node_id.group(1)}/state", ["all"])[0] == 400


class TestPortArgument:
    @pytest.mark.parametrize("value", ["70000", "-1", "http"])
    def test_a_bad_port_is_a_usage_error(
        self, value: str, project: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        with pytest.raises(SystemExit) as exit_:
            main(["viz", str(project), "--port", value])
        assert exit_.value.code == 2
        assert f"port must be an integer 0-65535, got {value!r}" in capsys.readouterr().err
