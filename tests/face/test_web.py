"""Browser face in real headless Chromium: page loads, follows state changes, taps and typed text."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from aiohttp import ClientSession

from face.bench import CHROMIUM, CHROMIUM_ARGS
from face.controller import FaceController
from face.settings import FaceSettings
from face.state import FaceState
from face.web import FaceWebServer

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not installed")


@dataclass
class Rig:
    server: FaceWebServer
    controller: FaceController
    page: object
    taps: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    from playwright.async_api import async_playwright

    taps: list[str] = []
    texts: list[str] = []
    settings = replace(FaceSettings(), browser_port=0, browser_text_box=True)
    server = FaceWebServer(settings, on_tap=taps.append, on_text=texts.append)
    await server.start()
    controller = FaceController(settings, [server], random.Random(1))
    loop_task = asyncio.create_task(controller.run())
    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = await browser.new_page(viewport={"width": 640, "height": 400})
            await page.goto(server.url)
            await page.wait_for_function("document.body.dataset.state === 'idle'", timeout=10000)
            yield Rig(server, controller, page, taps, texts)
            await browser.close()
    finally:
        loop_task.cancel()
        await asyncio.gather(loop_task, return_exceptions=True)
        await server.stop()


async def test_page_draws_the_face(rig: Rig) -> None:
    page = rig.page
    assert await page.evaluate("document.body.dataset.connected") == "true"  # type: ignore[attr-defined]
    # the canvas shows the eye colour at the left eye's centre and black in a corner
    pixel = """([fx, fy]) => {
        const c = document.getElementById('face');
        const d = c.getContext('2d').getImageData(Math.round(c.width * fx), Math.round(c.height * fy), 1, 1).data;
        return [d[0], d[1], d[2]];
    }"""
    lit = None
    for _ in range(40):  # a blink or a saccade may hide the spot for a moment: sample for up to 4 s
        await asyncio.sleep(0.1)
        for fx in (0.30, 0.31, 0.29):  # around the left eye (saccades move it a little)
            rgb = await page.evaluate(pixel, [fx, 0.40])  # type: ignore[attr-defined]
            if rgb[2] > 150:
                lit = rgb
                break
        if lit is not None:
            break
    assert lit is not None and lit[0] < 120 and lit[2] > 150, lit
    assert await page.evaluate(pixel, [0.02, 0.02]) == [0, 0, 0]  # type: ignore[attr-defined]


async def test_every_state_change_reaches_the_page(rig: Rig) -> None:
    # The mechanism, in order: each state the controller shows is the page's next state (a state
    # pushed, not polled; how fast it arrives is a figure for a benchmark, not a bound for a test).
    for state in (FaceState.LISTENING, FaceState.THINKING, FaceState.SPEAKING, FaceState.OFFLINE):
        rig.controller.show_state(state)
        await rig.page.wait_for_function(  # type: ignore[attr-defined]
            f"document.body.dataset.state === '{state.value}'", timeout=2000, polling=10
        )
    rig.controller.set_expression("happy")
    await rig.page.wait_for_function(  # type: ignore[attr-defined]
        "document.body.dataset.expression === 'happy'", timeout=2000
    )


async def test_click_is_a_screen_tap_and_typed_text_is_delivered(rig: Rig) -> None:
    page = rig.page
    await page.click("#face", position={"x": 320, "y": 150})  # type: ignore[attr-defined]
    await page.fill("#typed-text", "  hello robot ")  # type: ignore[attr-defined]
    await page.press("#typed-text", "Enter")  # type: ignore[attr-defined]
    for _ in range(100):
        if rig.taps and rig.texts:
            break
        await asyncio.sleep(0.02)
    assert rig.taps == ["screen"]
    assert rig.texts == ["hello robot"]


async def test_server_ignores_bad_messages_and_keeps_serving() -> None:
    taps: list[str] = []
    server = FaceWebServer(replace(FaceSettings(), browser_port=0), on_tap=taps.append)
    await server.start()
    try:
        async with ClientSession() as http, http.ws_connect(server.url + "ws") as ws:
            hello = json.loads((await ws.receive()).data)
            assert hello == {"type": "hello", "text_box": False}
            await ws.send_str("not json")
            await ws.send_str('{"type": "launch_missiles"}')
            await ws.send_str('{"type": "text", "text": "nobody listens"}')  # no on_text: ignored
            await ws.send_str('{"type": "tap"}')
            for _ in range(100):
                if taps:
                    break
                await asyncio.sleep(0.01)
            assert taps == ["screen"]
            assert server.client_count == 1
            async with http.get(server.url) as resp:
                assert resp.status == 200 and "face.js" in await resp.text()
    finally:
        await server.stop()


async def test_the_page_is_what_makes_the_browser_face_watched() -> None:
    server = FaceWebServer(replace(FaceSettings(), browser_port=0), on_tap=lambda source: None)
    woken: list[bool] = []
    server.on_watched = lambda: woken.append(server.watched)
    await server.start()
    try:
        assert not server.watched  # no page: the controller may idle
        async with ClientSession() as http, http.ws_connect(server.url + "ws") as ws:
            await ws.receive()  # hello
            assert server.watched and woken == [True]  # the controller is woken as the page connects
        for _ in range(100):
            if not server.watched:
                break
            await asyncio.sleep(0.01)
        assert not server.watched
    finally:
        await server.stop()


async def test_port_in_use_is_a_clear_error() -> None:
    first = FaceWebServer(replace(FaceSettings(), browser_port=0), on_tap=lambda s: None)
    await first.start()
    try:
        port = int(first.url.rsplit(":", 1)[1].strip("/"))
        second = FaceWebServer(replace(FaceSettings(), browser_port=port), on_tap=lambda s: None)
        with pytest.raises(OSError, match=f"127.0.0.1:{port}"):
            await second.start()
    finally:
        await first.stop()


async def test_page_reconnects_after_the_daemon_restarts() -> None:
    from playwright.async_api import async_playwright

    first = FaceWebServer(replace(FaceSettings(), browser_port=0), on_tap=lambda s: None)
    await first.start()
    port = int(first.url.rsplit(":", 1)[1].strip("/"))
    first.render(FaceController(FaceSettings(), []).snapshot())
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = await browser.new_page()
        await page.goto(first.url)
        await page.wait_for_function("document.body.dataset.state === 'idle'", timeout=10000)
        await first.stop()
        await page.wait_for_function("document.body.dataset.connected === 'false'", timeout=5000)
        second = FaceWebServer(replace(FaceSettings(), browser_port=port), on_tap=lambda s: None)
        await second.start()
        try:
            c = FaceController(FaceSettings(), [second])
            c.show_state(FaceState.ASLEEP)
            c.step(0.1)
            await page.wait_for_function("document.body.dataset.state === 'asleep'", timeout=10000)
            assert await page.evaluate("document.body.dataset.connected") == "true"
        finally:
            await browser.close()
            await second.stop()


async def test_the_browser_bench_measures_every_state_change() -> None:
    from face.bench import bench_browser

    figures = await bench_browser(1.0)
    changes = 5 * (len(FaceState) - 1)  # every state but waking (it turns itself into idle), 5 rounds
    assert figures["state_changes"] == changes
    assert 0.0 < figures["state_median_ms"] <= figures["state_max_ms"] < 5000.0  # each one waited for
    assert figures["page_frames_per_s"] > 0.0
