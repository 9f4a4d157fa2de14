"""``robot-face bench face``: model update cost, renderer fps and CPU share at 30 fps."""

from __future__ import annotations

import asyncio
import io
import os
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from face.mouth_cues import Cue

from .controller import FaceController
from .model import FaceModel
from .params import FaceParams
from .renderers import Renderer
from .settings import FaceSettings
from .state import EMOTIONS, FaceState

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

_VISEMES: tuple[str, ...] = ("aa", "ee", "oo", "mbp", "fv", "l", "s", "rest")


def busy_script(model: FaceModel, frame: int) -> None:
    """Drive the model through states, expressions and lip-sync (a busy conversation)."""
    if frame % 90 == 0:
        states = list(FaceState)
        model.set_state(states[(frame // 90) % len(states)])
    if frame % 45 == 0:
        model.set_expression(EMOTIONS[(frame // 45) % len(EMOTIONS)])
    if frame % 60 == 0:
        cues = [Cue(i * 0.08, (i + 1) * 0.08, _VISEMES[i % len(_VISEMES)]) for i in range(25)]
        model.play_visemes(cues)


def bench_model(frames: int = 3000) -> float:
    """Mean model ``update`` cost in milliseconds per frame under a busy script."""
    model = FaceModel(FaceSettings(), random.Random(7))
    total = 0.0
    for i in range(frames):
        busy_script(model, i)
        t0 = time.perf_counter()
        model.update(1.0 / 30.0)
        total += time.perf_counter() - t0
    return total / frames * 1000.0


def bench_renderer_cost(renderer: Renderer, frames: int = 90) -> float:
    """Mean ``render`` cost in milliseconds per frame (unpaced)."""
    model = FaceModel(FaceSettings(), random.Random(7))
    params: list[FaceParams] = []
    for i in range(frames):
        busy_script(model, i)
        params.append(model.update(1.0 / 30.0))
    t0 = time.perf_counter()
    for p in params:
        renderer.render(p)
    return (time.perf_counter() - t0) / frames * 1000.0


async def run_paced(renderers: list[Renderer], seconds: float, fps: int = 30) -> tuple[float, float]:
    """Run a FaceController at ``fps`` for ``seconds``; return (achieved fps, CPU share of one core)."""
    controller = FaceController(FaceSettings(fps=fps), renderers, random.Random(7))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    task = asyncio.create_task(controller.run())

    async def script() -> None:
        i = 0
        while True:
            busy_script(controller.model, i)
            i += 1
            await asyncio.sleep(1.0 / fps)

    driver = asyncio.create_task(script())
    await asyncio.sleep(seconds)
    task.cancel()
    driver.cancel()
    await asyncio.gather(task, driver, return_exceptions=True)
    wall = time.perf_counter() - wall0
    return controller.frames / wall, (time.process_time() - cpu0) / wall


async def bench_browser(seconds: float) -> dict[str, float]:
    """Serve the face to headless Chromium at 30 fps; page-side fps from requestAnimationFrame counts."""
    from playwright.async_api import async_playwright

    from .web import FaceWebServer

    server = FaceWebServer(FaceSettings(browser_port=0), on_tap=lambda _s: None)
    await server.start()
    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = await browser.new_page(viewport={"width": 800, "height": 480})
            await page.goto(server.url)
            await page.wait_for_function("window.faceStats && window.faceStats.messages > 0", timeout=10000)
            paced = asyncio.create_task(run_paced([server], seconds))
            await asyncio.sleep(0.5)
            s0 = await page.evaluate("({...window.faceStats})")
            t0 = time.perf_counter()
            await asyncio.sleep(max(0.5, seconds - 1.0))
            s1 = await page.evaluate("({...window.faceStats})")
            dt = time.perf_counter() - t0
            fps, cpu = await paced
            latencies = await state_latencies(server, page)
            await browser.close()
    finally:
        await server.stop()
    return {
        "server_fps": fps,
        "server_cpu": cpu,
        "page_raf_per_s": (s1["rafTicks"] - s0["rafTicks"]) / dt,
        "page_frames_per_s": (s1["framesDrawn"] - s0["framesDrawn"]) / dt,
        "state_median_ms": statistics.median(latencies) * 1000,
        "state_max_ms": max(latencies) * 1000,
        "state_changes": len(latencies),
    }


async def state_latencies(server: Renderer, page: Any, rounds: int = 5) -> list[float]:
    """Seconds from ``show_state`` on a running controller to the page's ``data-state`` saying it,
    for every state in turn, ``rounds`` times (the page polled every 10 ms: that is the resolution)."""
    controller = FaceController(FaceSettings(), [server], random.Random(7))
    task = asyncio.create_task(controller.run())
    latencies: list[float] = []
    try:
        # every state that stays until changed (waking turns itself into idle), back to idle last
        states = [s for s in FaceState if s not in (FaceState.IDLE, FaceState.WAKING)] + [FaceState.IDLE]
        for _ in range(rounds):
            for state in states:
                t0 = time.perf_counter()
                controller.show_state(state)
                await page.wait_for_function(
                    f"document.body.dataset.state === '{state.value}'", timeout=5000, polling=10
                )
                latencies.append(time.perf_counter() - t0)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return latencies


def run_bench(seconds: float = 3.0, which: tuple[str, ...] = ("terminal", "pygame", "browser")) -> int:
    """Print the face benchmark figures; return an exit code."""
    out: Callable[[str], None] = print
    out(f"model update: {bench_model():.3f} ms/frame (goal <= 0.5)")
    if "terminal" in which:
        from .renderers.terminal import TerminalRenderer

        term = TerminalRenderer(io.StringIO(), force_tty=True)
        cost = bench_renderer_cost(term)
        fps, cpu = asyncio.run(run_paced([TerminalRenderer(io.StringIO(), force_tty=True)], seconds))
        out(
            f"terminal: {cost:.2f} ms/frame (max {1000 / cost:.0f} fps); at 30 fps: {fps:.1f} fps, "
            f"{cpu * 100:.1f}% of one core (model+renderer; goal <= 15%)"
        )
    if "pygame" in which:
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        from .renderers.pygame_renderer import PygameRenderer

        pg = PygameRenderer(fullscreen=False)
        cost = bench_renderer_cost(pg)
        fps, cpu = asyncio.run(run_paced([pg], seconds))
        out(
            f"pygame ({os.environ.get('SDL_VIDEODRIVER') or 'default'} driver, 800x480): {cost:.2f} ms/frame "
            f"(max {1000 / cost:.0f} fps); at 30 fps: {fps:.1f} fps, {cpu * 100:.1f}% of one core "
            "(goal <= 15%)"
        )
    if "browser" in which:
        if not os.path.exists(CHROMIUM):
            out(f"browser: skipped ({CHROMIUM} not found)")
        else:
            r = asyncio.run(bench_browser(seconds))
            out(
                f"browser (headless chromium 800x480): page drew {r['page_frames_per_s']:.1f} frames/s "
                f"(rAF {r['page_raf_per_s']:.1f}/s); server {r['server_fps']:.1f} fps at "
                f"{r['server_cpu'] * 100:.1f}% of one core (goal: page keeps 30 fps)"
            )
            out(
                f"browser: a state change reaches the page in {r['state_median_ms']:.0f} ms median, "
                f"{r['state_max_ms']:.0f} ms at most, over {r['state_changes']:.0f} changes (polled every "
                "10 ms; goal: median under 200 ms)"
            )
    return 0
