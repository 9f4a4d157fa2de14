"""FaceModel with synthetic time: life, states, expressions, lip-sync."""

from __future__ import annotations

import itertools
import json
import math
import random
from dataclasses import fields, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audio.events import VisemeCue
from face.model import FaceModel
from face.params import NUMERIC_FIELDS, FaceParams
from face.poses import CLAMPED_01
from face.settings import FaceSettings
from face.state import EMOTIONS, FaceState

DT = 1.0 / 30.0


def run(model: FaceModel, seconds: float) -> list[FaceParams]:
    return [model.update(DT) for _ in range(round(seconds / DT))]


def make(seed: int = 1, **overrides: object) -> FaceModel:
    return FaceModel(replace(FaceSettings(), **overrides), random.Random(seed))  # type: ignore[arg-type]


def blink_starts(frames: list[FaceParams]) -> list[int]:
    """Frame indexes where the upper lid crosses 0.9 going down."""
    out = []
    for i in range(1, len(frames)):
        if frames[i].lid_l_top >= 0.9 > frames[i - 1].lid_l_top:
            out.append(i)
    return out


def test_same_seed_same_face_different_seed_different_face() -> None:
    a, b, c = make(5), make(5), make(6)
    fa, fb, fc = run(a, 10), run(b, 10), run(c, 10)
    assert fa == fb
    assert fa != fc


def test_blinks_at_random_intervals_within_settings() -> None:
    frames = run(make(3, blink_min_s=2.0, blink_max_s=5.0), 60)
    starts = blink_starts(frames)
    assert len(starts) >= 10  # ~60 s / 3.5 s average, plus double blinks
    gaps = [(b - a) * DT for a, b in itertools.pairwise(starts)]
    long_gaps = [g for g in gaps if g > 1.0]
    assert all(g <= 5.0 + 0.4 for g in gaps)
    assert min(long_gaps) >= 2.0 - 0.1
    assert len({round(g, 1) for g in long_gaps}) > 3  # randomised, not periodic
    assert max(f.lid_l_top for f in frames[starts[0] + 10 : starts[0] + 15]) < 0.2  # reopens


def test_saccades_move_gaze_with_eased_motion() -> None:
    frames = run(make(4), 20)
    gx = [f.gaze_x for f in frames]
    assert max(gx) - min(gx) > 0.2
    steps = [abs(b - a) for a, b in itertools.pairwise(gx)]
    assert max(steps) < 0.35  # never teleports: a shift spans several frames
    assert sum(1 for s in steps if s > 0.005) > 10


@pytest.mark.parametrize("state", list(FaceState))
def test_nothing_ever_freezes(state: FaceState) -> None:
    model = make(2)
    model.set_state(state)
    frames = run(model, 6)
    for i in range(0, len(frames) - 30, 15):  # every half-second window changes
        window = frames[i : i + 30]
        assert len(set(window)) > 1, f"{state} froze at frame {i}"


def test_asleep_closed_dim_slow_breathing_no_blinks() -> None:
    model = make(1)
    model.set_state(FaceState.ASLEEP)
    run(model, 2)
    frames = run(model, 20)
    s = FaceSettings()
    assert all(f.lid_l_top >= 0.85 and f.lid_r_top >= 0.85 for f in frames)
    assert max(f.brightness for f in frames) <= s.asleep_brightness * 1.3
    ys = [f.eye_l_y for f in frames]
    assert max(ys) - min(ys) > 0.02  # breathing is visible
    # breathing period ~ 1.6 x awake period: count rising zero crossings around the mean
    mean = sum(ys) / len(ys)
    ups = sum(1 for a, b in itertools.pairwise(ys) if a < mean <= b)
    assert 2 <= ups <= 4  # 20 s / 6.4 s
    assert frames[-1].state == "asleep"


def test_waking_animation_then_idle() -> None:
    model = make(1, wake_duration_s=1.2)
    model.set_state(FaceState.ASLEEP)
    run(model, 2)
    model.set_state(FaceState.WAKING)
    frames = run(model, 1.1)
    assert {f.state for f in frames} == {"waking"}
    lids = [f.lid_l_top for f in frames]
    assert lids[0] > 0.8 and min(lids) < 0.1  # eyes open up
    bright = [f.brightness for f in frames]
    assert bright[0] < 0.5 and bright[-1] > 0.9
    after = run(model, 0.5)
    assert after[-1].state == "idle"


def settled(state: FaceState, expression: str = "neutral", **overrides: object) -> FaceParams:
    model = make(1, blink_min_s=1e9, blink_max_s=1e9, saccade_min_s=1e9, saccade_max_s=1e9, **overrides)
    model.set_state(state)
    model.set_expression(expression)
    return run(model, 2.5)[-1]


def test_thinking_looks_up_and_away() -> None:
    p = settled(FaceState.THINKING)
    assert p.gaze_y < -0.3 and abs(p.gaze_x) > 0.3
    idle = settled(FaceState.IDLE)
    assert p.eye_r_x > idle.eye_r_x


def test_state_colours_come_from_settings() -> None:
    s = FaceSettings()
    assert settled(FaceState.IDLE).colour == s.eye_colour
    assert settled(FaceState.LISTENING).colour == s.listening_colour
    assert settled(FaceState.OFFLINE).colour == s.offline_colour
    assert settled(FaceState.ERROR).colour == s.error_colour
    assert settled(FaceState.IDLE, eye_colour="#ff00ff").colour == "#ff00ff"


def test_eye_size_setting_scales_eyes() -> None:
    small, big = settled(FaceState.IDLE, eye_size=0.8), settled(FaceState.IDLE, eye_size=1.2)
    assert big.eye_l_w == pytest.approx(small.eye_l_w * 1.5, rel=0.02)


def test_listening_reacts_when_speech_starts() -> None:
    model = make(1, blink_min_s=1e9, blink_max_s=1e9)
    model.set_state(FaceState.LISTENING)
    before = run(model, 2)[-1]
    model.notice()
    peak = max(f.eye_l_h for f in run(model, 0.5))
    assert peak > before.eye_l_h * 1.1
    assert run(model, 1)[-1].eye_l_h < before.eye_l_h * 1.05


def distance(a: FaceParams, b: FaceParams) -> float:
    return sum(abs(getattr(a, k) - getattr(b, k)) for k in NUMERIC_FIELDS if not k.endswith("angle")) + sum(
        abs(getattr(a, k) - getattr(b, k)) / 30 for k in NUMERIC_FIELDS if k.endswith("angle")
    )


def test_every_state_and_expression_is_distinct() -> None:
    looks = {f"state:{s}": settled(s) for s in FaceState if s != FaceState.WAKING}
    looks |= {f"emotion:{e}": settled(FaceState.IDLE, e) for e in EMOTIONS if e != "neutral"}
    names = sorted(looks)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            same_colour = looks[a].colour == looks[b].colour
            if same_colour:
                assert distance(looks[a], looks[b]) > 0.3, f"{a} looks like {b}"


def test_expression_signatures() -> None:
    happy, sad = settled(FaceState.IDLE, "happy"), settled(FaceState.IDLE, "sad")
    angry, surprised = settled(FaceState.IDLE, "angry"), settled(FaceState.IDLE, "surprised")
    sleepy = settled(FaceState.IDLE, "sleepy")
    assert happy.mouth_curve > 0.5 and happy.lid_l_bottom > 0.4
    assert sad.mouth_curve < -0.5 and sad.lid_l_top_angle < -10
    assert angry.lid_l_top_angle > 15 and angry.lid_r_top_angle > 15 and angry.brow_alpha > 0.9
    assert surprised.mouth_open > 0.4 and surprised.eye_l_h > settled(FaceState.IDLE).eye_l_h
    assert sleepy.lid_l_top > 0.4


def test_unknown_expression_rejected() -> None:
    model = make()
    with pytest.raises(ValueError, match="unknown emotion 'joy'"):
        model.set_expression("joy")
    assert model.expression == "neutral"


def test_expression_blends_smoothly_holds_during_speech_then_eases_back() -> None:
    model = make(1, blink_min_s=1e9, blink_max_s=1e9, expression_hold_s=1.0, expression_blend_s=0.35)
    run(model, 1)
    cues = [VisemeCue(i * 0.1, (i + 1) * 0.1, "aa" if i % 2 else "mbp") for i in range(40)]  # 4 s
    model.play_visemes(cues)
    model.set_expression("sad")
    frames = run(model, 3.9)
    curves = [f.lid_l_top_angle for f in frames]
    assert max(abs(b - a) for a, b in itertools.pairwise(curves)) < 4.0  # degrees/frame
    assert curves[15] < -10  # blended in within 0.5 s
    assert all(f.expression == "sad" for f in frames)  # held while speaking (longer than hold)
    after = run(model, 0.5)
    assert after[-1].expression == "sad"  # hold time counts from the end of speech
    later = run(model, 2.0)
    assert later[-1].expression == "neutral"
    assert later[-1].lid_l_top_angle > -1.0


def test_mouth_follows_viseme_timeline_with_delay() -> None:
    model = make(1)
    model.set_state(FaceState.SPEAKING)
    run(model, 0.5)
    cues = [VisemeCue(0.0, 0.3, "aa"), VisemeCue(0.3, 0.6, "mbp"), VisemeCue(0.6, 0.9, "oo")]
    model.play_visemes(cues, delay=0.5)
    assert model.speaking
    pre = run(model, 0.45)
    assert all(f.viseme == "rest" for f in pre) and pre[-1].mouth_open < 0.1
    aa = run(model, 0.3)
    assert aa[-1].viseme == "aa" and aa[-1].mouth_open > 0.6
    mbp = run(model, 0.3)
    assert mbp[-1].viseme == "mbp" and mbp[-1].mouth_open < 0.1
    oo = run(model, 0.3)
    assert oo[-1].viseme == "oo" and oo[-1].mouth_round > 0.7
    rest = run(model, 0.5)
    assert rest[-1].viseme == "rest" and rest[-1].mouth_open < 0.05
    assert not model.speaking


def test_negative_delay_joins_a_running_timeline_and_stop_mouth() -> None:
    model = make(1)
    model.play_visemes([VisemeCue(0.0, 1.0, "ee"), VisemeCue(1.0, 2.0, "oo")], delay=-1.5)
    assert model.update(DT).viseme == "oo"
    model.stop_mouth()
    frames = run(model, 0.3)
    assert frames[-1].viseme == "rest" and frames[-1].mouth_round < 0.05


def test_next_sentence_supersedes_the_queued_rest() -> None:
    model = make(1)
    model.play_visemes([VisemeCue(0.0, 2.0, "ee")])
    model.play_visemes([VisemeCue(0.0, 1.0, "oo")], delay=0.5)
    assert run(model, 0.3)[-1].viseme == "ee"
    assert run(model, 0.5)[-1].viseme == "oo"
    assert run(model, 1.0)[-1].viseme == "rest"


def test_asleep_drops_mouth_and_expression() -> None:
    model = make(1)
    model.set_expression("happy")
    model.play_visemes([VisemeCue(0.0, 5.0, "aa")])
    model.set_state(FaceState.ASLEEP)
    p = run(model, 2)[-1]
    assert p.viseme == "rest" and p.expression == "neutral" and p.mouth_open < 0.05


def test_bad_dt_rejected() -> None:
    model = make()
    with pytest.raises(ValueError):
        model.update(-0.1)


def test_params_are_json_serialisable_and_round_trip() -> None:
    p = run(make(), 1)[-1]
    data = json.loads(json.dumps(p.to_dict()))
    assert FaceParams.from_dict(data) == p
    assert {f.name for f in fields(FaceParams)} == set(data)


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.floats(0.0, 0.5),
            st.sampled_from([*list(FaceState), *EMOTIONS, "visemes", "stop", "notice", None]),
        ),
        min_size=1,
        max_size=60,
    ),
    seed=st.integers(0, 1000),
)
def test_any_command_sequence_keeps_params_valid(steps: list[tuple[float, object]], seed: int) -> None:
    model = make(seed)
    for dt, command in steps:
        if isinstance(command, FaceState):
            model.set_state(command)
        elif command in EMOTIONS:
            model.set_expression(str(command))
        elif command == "visemes":
            model.play_visemes([VisemeCue(0.0, 0.2, "aa"), VisemeCue(0.2, 0.4, "oo")], delay=dt - 0.2)
        elif command == "stop":
            model.stop_mouth()
        elif command == "notice":
            model.notice()
        p = model.update(dt)
        for key in NUMERIC_FIELDS:
            assert math.isfinite(getattr(p, key)), key
        for key in CLAMPED_01:
            assert 0.0 <= getattr(p, key) <= 1.0, key
        assert p.state in {s.value for s in FaceState}
        assert p.expression in EMOTIONS
