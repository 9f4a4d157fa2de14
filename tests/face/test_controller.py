"""FaceController: frame loop, renderer failures, aliases, viseme timing."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import replace

import pytest

from audio.events import VisemeCue
from face.controller import FaceController, resolve_emotion
from face.params import FaceParams
from face.settings import FaceSettings
from face.state import EMOTIONS, FaceState


class Recorder:
    def __init__(self, watched: bool = True) -> None:
        self.frames: list[FaceParams] = []
        self.closed = False
        self.watched = watched

    def render(self, params: FaceParams) -> None:
        self.frames.append(params)

    def close(self) -> None:
        self.closed = True


class Exploding(Recorder):
    def render(self, params: FaceParams) -> None:
        super().render(params)
        if len(self.frames) == 3:
            raise RuntimeError("display unplugged")


def test_resolve_emotion_canonical_alias_unknown() -> None:
    c = FaceController(replace(FaceSettings(), aliases={"joy": "happy", "Grumpy": "ANGRY", "bad": "x"}), [])
    for e in EMOTIONS:
        assert c.resolve_emotion(e) == e
        assert c.resolve_emotion(e.upper()) == e
    assert c.resolve_emotion("joy") == "happy"
    assert c.resolve_emotion("grumpy") == "angry"
    assert c.resolve_emotion("bad") is None
    assert c.resolve_emotion("sleep") is None
    assert resolve_emotion("mad", FaceSettings().aliases) == "angry"


async def test_run_renders_at_frame_rate_and_survives_a_failing_renderer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    good, bad = Recorder(), Exploding()
    c = FaceController(replace(FaceSettings(), fps=30), [bad, good], random.Random(1))
    task = asyncio.create_task(c.run())
    await asyncio.sleep(0.5)
    c.show_state(FaceState.THINKING)
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(bad.frames) == 3 and bad.closed
    assert len(good.frames) > 10
    assert good.frames[-1].state == "thinking"
    assert good.closed  # closed on the way out
    assert c.renderers == [good]
    assert "disabling it" in caplog.text
    assert c.snapshot() == good.frames[-1]


async def test_unwatched_face_runs_at_the_idle_rate_until_a_renderer_is_watched() -> None:
    seen = Recorder(watched=False)
    c = FaceController(replace(FaceSettings(), fps=30, idle_fps=4), [seen], random.Random(1))
    assert c.period == pytest.approx(1 / 4)
    task = asyncio.create_task(c.run())
    await asyncio.sleep(1.0)
    idle_frames = len(seen.frames)
    seen.watched = True
    c.wake()  # what the browser face calls when a page connects: no wait for the idle frame
    woke = len(seen.frames)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    first_after_wake = len(seen.frames)
    await asyncio.sleep(1.0)
    watched_frames = len(seen.frames) - first_after_wake
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert 3 <= idle_frames <= 6, idle_frames  # 4 fps (+ the first frame), not 30
    assert first_after_wake == woke + 1  # wake() rendered the next frame at once
    assert watched_frames >= 20, watched_frames  # the full rate once watched
    assert c.period == pytest.approx(1 / 30)


def test_idle_fps_must_be_between_one_and_fps() -> None:
    with pytest.raises(ValueError, match="idle_fps"):
        replace(FaceSettings(), fps=10, idle_fps=12).validate()
    with pytest.raises(ValueError, match="idle_fps"):
        replace(FaceSettings(), idle_fps=0).validate()
    replace(FaceSettings(), fps=10, idle_fps=10).validate()


def test_play_visemes_converts_unix_start_to_model_delay() -> None:
    c = FaceController(FaceSettings(), [], random.Random(1))
    cues = [VisemeCue(0.0, 0.5, "ee"), VisemeCue(0.5, 1.0, "oo")]
    c.play_visemes(cues, start_ts=time.time() - 0.7)  # sentence started 0.7 s ago
    assert c.step(0.0).viseme == "oo"
    c.play_visemes(cues, start_ts=time.time() + 0.3)
    assert c.step(0.1).viseme == "oo"  # the previous sentence plays until the next one starts
    assert c.step(0.3).viseme == "ee"
    c.stop_mouth()
    assert c.step(0.03).viseme == "rest"


def test_set_expression_and_snapshot() -> None:
    c = FaceController(FaceSettings(), [], random.Random(1))
    c.set_expression("happy")
    for _ in range(30):
        c.step(1 / 30)
    assert c.snapshot().expression == "happy"
    with pytest.raises(ValueError):
        c.set_expression("joy")


def test_bad_fps_rejected() -> None:
    with pytest.raises(ValueError, match="fps"):
        FaceController(replace(FaceSettings(), fps=0), [])


def test_make_renderers_follows_the_setting() -> None:
    from face.renderers.choice import make_renderers
    from face.renderers.terminal import TerminalRenderer
    from face.web import FaceWebServer

    assert make_renderers(replace(FaceSettings(), renderer="none"), print) == ([], None)
    renderers, server = make_renderers(replace(FaceSettings(), renderer="terminal"), print)
    assert isinstance(renderers[0], TerminalRenderer) and server is None
    renderers, server = make_renderers(replace(FaceSettings(), renderer="browser"), print)
    assert isinstance(server, FaceWebServer) and renderers == [server]
    with pytest.raises(ValueError, match="'hologram' unknown"):
        make_renderers(replace(FaceSettings(), renderer="hologram"), print)
