"""Timing on the duplex path: capture times follow the samples, not a thread's jitter, and the
canceller is not trusted again right after a timing jump (its echo path moved)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pytest

from audio.edges.reference import SampleClock
from audio.hearing.echo_tail import EchoGuard
from audio.hearing.front_end import (
    CONVERGE_FRAMES,
    FRAME,
    RATE,
    RECONVERGE_FRAMES,
    FrontEnd,
    FrontEndOptions,
    FrontEndSource,
    ResidualGate,
)

if TYPE_CHECKING:
    from audio.tools.bench_duplex import WerFigures


def test_the_sample_clock_ignores_jitter_and_follows_a_jump() -> None:
    clock = SampleClock(16000, tolerance_s=0.05)
    rng = np.random.default_rng(0)
    starts = [clock.stamp(480, 100.0 + 0.03 * i + rng.uniform(-0.02, 0.02)) for i in range(100)]
    assert np.allclose(np.diff(starts), 0.03) and clock.resyncs == 0
    assert clock.stamp(480, 100.0 + 3.0 + 0.2) == 103.2  # 200 ms off: a real jump, re-anchored
    assert clock.resyncs == 1


def _feed(front: FrontEnd, seconds: float, t0: float, play_jump: float = 0.0) -> float:
    """Play and capture noise for ``seconds`` from ``t0``; the reference's play times jump by
    ``play_jump`` at the start. Returns the end time."""
    rng = np.random.default_rng(1)
    t = t0
    for _ in range(int(seconds * 100)):
        far = (rng.standard_normal(FRAME) * 0.1).astype(np.float32)
        front.reference(far, t + play_jump, RATE)
        front.process(far * 0.5, t)
        t += FRAME / RATE
    return t


def test_after_a_timing_jump_the_canceller_must_reconverge() -> None:
    front = FrontEnd(FrontEndOptions())
    t = _feed(front, CONVERGE_FRAMES / 100 + 0.5, 1000.0)
    assert front.converged and front.timing_jumps == 0
    t = _feed(front, 0.5, t, play_jump=0.3)  # the speaker's timeline re-anchored 300 ms away
    assert front.timing_jumps == 1 and not front.converged
    _feed(front, RECONVERGE_FRAMES / 100, t, play_jump=0.3)
    assert front.converged


def test_the_guard_forgets_the_erle_it_tracked() -> None:
    guard = EchoGuard()
    for _ in range(200):
        guard.allows(False, -30.0, -70.0, -20.0)
    assert guard.erle_db > 30
    guard.reset()
    assert guard.erle_db == guard.initial_erle_db


def test_nothing_is_speech_while_a_reply_starts() -> None:
    guard = EchoGuard()
    for _ in range(100):  # silence: what the VAD says goes
        assert guard.allows(True, -40.0, -40.0, -90.0)
    # The reply starts: a frame that would pass as the user (cleaned well above the residue)
    # does not during the onset, and does after it.
    verdicts = [guard.allows(True, -30.0, -30.0, -20.0) for _ in range(guard.onset_frames + 5)]
    assert not any(verdicts[: guard.onset_frames]) and all(verdicts[guard.onset_frames :])


@pytest.mark.parametrize("frame_ms", [10, 20, 30])
def test_the_reply_onset_window_and_the_hold_are_durations_whatever_the_frame(frame_ms: int) -> None:
    """400 ms of onset and 900 ms of hold, counted in the frames the guard is given (30 ms
    capture blocks at run time: the window was once 40 frames, 1.2 s, where 400 ms was meant)."""
    guard = EchoGuard(frame_ms=frame_ms)
    for _ in range(50):
        guard.allows(True, -40.0, -40.0, -90.0)  # silence
    playing = [guard.allows(True, -30.0, -30.0, -20.0) for _ in range(2000 // frame_ms)]
    assert 400 <= playing.index(True) * frame_ms < 400 + frame_ms
    ringing = 0
    for _ in range(1500 // frame_ms):  # the far end falls silent
        guard.allows(True, -40.0, -40.0, -90.0)
        ringing += guard.playing
    assert 900 <= ringing * frame_ms < 900 + frame_ms


class _Microphone:
    """A microphone that opens and closes (no audio: the test feeds the front end itself)."""

    overflows = 0

    def open_timed(self, on_audio: object, on_lost: object) -> int:
        return RATE

    def close(self) -> None:
        pass


def test_a_microphone_stream_opened_again_makes_the_canceller_reconverge() -> None:
    """Asleep and awake: the stream closes and opens again. A gap shorter than the capture clock's
    tolerance (the e2e barge-in scenario's sleep and wake were 49 ms apart) would pass for
    contiguous audio, the echo path moved by it for the canceller; so the reopened stream starts a
    new capture timeline, the canceller must re-converge (half duplex meanwhile), and the gate
    forgets the ERLE it tracked."""
    front = FrontEnd(FrontEndOptions())
    t = _feed(front, CONVERGE_FRAMES / 100 + 0.5, 1000.0)
    gate = ResidualGate()
    source = FrontEndSource(_Microphone(), front, gate=gate)
    source.open(lambda block: None, lambda detail: None)
    assert front.converged and source.duplex == "full"  # the first open changes nothing
    gate.guard.erle_db = 40.0
    source.close()
    source.open(lambda block: None, lambda detail: None)
    try:
        assert not front.converged and source.duplex == "half"
        assert gate.guard.erle_db == gate.guard.initial_erle_db
        for _ in range(4):  # 40 ms asleep: the speaker's timeline goes on, nothing is captured
            front.reference(np.zeros(FRAME, np.float32), t, RATE)
            t += FRAME / RATE
        _feed(front, RECONVERGE_FRAMES / 100 + 0.1, t)
        assert front.converged and front.timing_jumps == 0
    finally:
        source.close()


def _block(db: float, n: int = 480) -> np.ndarray:
    """A 30 ms block of a tone at ``db`` dBFS (RMS)."""
    t = np.arange(n) / 16000
    return (np.sin(2 * np.pi * 440 * t) * np.sqrt(2) * 10 ** (db / 20)).astype(np.float32)


def test_the_bench_gate_takes_the_margin_its_guard_names() -> None:
    """``gate/12dB`` in ``robot-face bench duplex`` is the gate at a 12 dB margin: a block standing
    9 dB over the residue the tracked ERLE expects passes the runtime's 6 dB and not 12 dB."""
    from audio.tools.bench_duplex import GuardSpec, gate_residual, parse_guard

    assert parse_guard("gate/12dB") == GuardSpec("gate", margin_db=12.0)
    assert parse_guard("strict+gate@1200") == GuardSpec("strict+gate", onset_ms=1200)
    assert parse_guard("strict150+gate-tail") == GuardSpec("strict+gate", tail=False, need_ms=150)
    assert parse_guard("strict90+gate~20") == GuardSpec("strict+gate", need_ms=90, removed_max_db=20.0)
    with pytest.raises(ValueError, match="unknown guard"):
        parse_guard("gate/twelve")
    echo_blocks = 60  # the reply plays, the canceller removes 50 dB: the tracked ERLE climbs
    guard = EchoGuard(frame_ms=30)
    for _ in range(echo_blocks):
        guard.allows(True, -20.0, -70.0, -20.0)
    assert guard.erle_db > 24.0  # half of it is above 12 dB: the margin is not capped below 12
    user_db = -17.0 - guard.erle_db + 9.0  # 9 dB over the residue expected of a -17 dB microphone
    far = np.concatenate([_block(-20.0)] * (echo_blocks + 1))
    raw = np.concatenate([_block(-20.0)] * echo_blocks + [_block(-17.0)])
    cleaned = np.concatenate([_block(-70.0)] * echo_blocks + [_block(user_db)])
    last = slice(echo_blocks * 480, None)
    runtime = gate_residual(raw, cleaned, far)
    wide = gate_residual(raw, cleaned, far, spec=GuardSpec("gate", margin_db=12.0))
    assert np.allclose(runtime[last], cleaned[last])
    assert np.max(np.abs(wide[last])) < 0.05 * np.max(np.abs(cleaned[last]))


def test_the_bench_hears_every_transition_between_replies() -> None:
    """``bench duplex``'s echo-only run cycles over every ordered pair of two different replies (the
    canceller leaks at the far end's pauses and restarts, so which sentence follows which matters)."""
    from audio.tools.bench_duplex import Reply, reply_pairs

    replies = [Reply(str(i), np.zeros(10, np.float32), 16000, np.zeros(10, np.float32)) for i in range(4)]
    pairs = [(a.text, b.text) for a, b in reply_pairs(replies)]
    assert len(pairs) == len(set(pairs)) == 4 * 3
    assert all(a != b for a, b in pairs)
    assert {a for a, _ in pairs} == {b for _, b in pairs} == {"0", "1", "2", "3"}


def test_the_bench_guard_has_heard_the_reply_before_listening_starts(
    hearing_say: Callable[[str], np.ndarray],
) -> None:
    """``detections`` from the end of a reply: its guard has run from the signal's start, as the
    device's runs all the time, so it knows the reply just stopped and holds the echo's decaying
    tail (the suppressor let go: the tail leaks at its raw level); a guard started fresh there (what
    the bench did until 2026-12-04) takes the tail for the user."""
    from audio.hearing.settings import HearingSettings
    from audio.tools.bench_duplex import detections

    rng = np.random.default_rng(0)
    play = 2 * 16000
    far = np.concatenate([rng.standard_normal(play) * 0.1, np.zeros(16000)]).astype(np.float32)
    words = hearing_say("Let me tell you a story.")
    words = words[np.argmax(np.abs(words) > 0.05) :][:8000]
    decay = 10 ** (-120.0 * np.arange(len(words)) / 16000 / 20)  # RT60 0.5 s
    tail = (words / np.sqrt(np.mean(words[:1600] ** 2)) * 0.05 * decay).astype(np.float32)
    raw = far * 0.5
    raw[play : play + len(tail)] += tail
    cleaned = raw * 0.01
    cleaned[play:] = raw[play:] * 0.9
    lead = play / 16000
    settings = HearingSettings()
    fresh = detections(cleaned[play:], raw[play:], far[play:], "gate", settings).starts
    assert fresh, "the tail is speech to the VAD: a guard that never heard the reply passes it"
    assert detections(cleaned, raw, far, "gate", settings, lead).starts == []
    assert detections(cleaned, raw, far, "gate-tail", settings, lead).starts, "the tail rule is what holds it"


def test_the_bench_pools_its_sets_of_replies() -> None:
    """``--sets N``: the figures of every set of replies add up (counts summed, values extended)."""
    from audio.tools.bench_duplex import BargeInFigures, EchoFigures

    def echo(false: int, erle: float) -> EchoFigures:
        figures = EchoFigures({"full": [erle]}, {("full", "gate"): false}, 108, [0.1])
        figures.cold_starts[("full", "gate")] = false + 1
        return figures

    pooled = echo(1, 40.0)
    pooled.add(echo(2, 45.0))
    assert pooled.false_starts == {("full", "gate"): 3}
    assert pooled.cold_starts == {("full", "gate"): 5}
    assert (pooled.replies, pooled.erle["full"], pooled.cpu_ms) == (216, [40.0, 45.0], [0.1, 0.1])
    barge = BargeInFigures({"gate": [0.1, None]}, {"gate": 0})
    barge.add(BargeInFigures({"gate": [0.2]}, {"gate": 1}, weak=[0.5, None], weak_db=6.0))
    assert barge.latencies == {"gate": [0.1, None, 0.2]} and barge.early == {"gate": 1}
    assert (barge.weak, barge.weak_db) == ([0.5, None], 6.0)


def test_the_barge_in_check_runs_the_devices_guard_over_the_weak_canceller_too(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``run_barge_in`` with ``limit_db``: each trial again over a canceller limited to that, with
    the device's guard; printed on a line of its own under the barge-in table."""
    from audio.hearing.settings import HearingSettings
    from audio.tools.bench_duplex import _print_barge_in, _user_clips, run_barge_in, synthesise_replies
    from tests.audio.conftest import HEARING_SPEECH_DIR

    replies, clips = synthesise_replies(2), _user_clips(HEARING_SPEECH_DIR)
    figures = run_barge_in(replies, clips, 3, -6.0, HearingSettings(), ("strict+gate",), 6.0)
    assert len(figures.latencies["strict+gate"]) == 3 and len(figures.weak) == 3 and figures.weak_db == 6.0
    assert any(v is not None for v in figures.latencies["strict+gate"])  # the full canceller hears them
    _print_barge_in(figures, ["strict+gate"])
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.startswith("strict+gate over a canceller limited to 6 dB: ") and "% detected" in line
    assert run_barge_in(replies, clips, 1, -6.0, HearingSettings(), ("gate",)).weak == []


def _wer_printed(wer: WerFigures, capsys: pytest.CaptureFixture[str]) -> str:
    """What ``print_tables`` prints with ``wer`` beside a one-room echo table and one barge-in."""
    from audio.tools.bench_duplex import BargeInFigures, EchoFigures, print_tables

    echo = EchoFigures({"full": [45.0]}, {("full", "gate"): 0}, 100, [0.1])
    print_tables(echo, BargeInFigures({"gate": [0.2]}, {"gate": 0}), wer)
    return capsys.readouterr().out


def test_the_wer_check_pools_its_sets_and_ducks_by_the_devices_guard(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The WER over the echo: every set's words count (it read the last set only), the reply is
    ducked from the device's own guard (it used the gate alone), and the printed figures are the
    pooled ones, each beside the clean WER."""
    from audio.tools.bench_duplex import (
        DEVICE_GUARD,
        WER_VIEWS,
        GuardSpec,
        WerFigures,
        parse_guard,
    )

    assert parse_guard(DEVICE_GUARD) == GuardSpec("strict+gate")  # the runtime's values, nothing changed
    pooled = WerFigures({"alone": 1, "ducked": 2, "gated": 5, "over": 20}, 22)
    pooled.add(WerFigures({"alone": 0, "ducked": 4, "gated": 3, "over": 22}, 22))
    assert set(pooled.errors) == set(WER_VIEWS) and pooled.words == 44
    assert pooled.errors == {"alone": 1, "ducked": 6, "gated": 8, "over": 42}
    out = _wer_printed(pooled, capsys)
    assert "(44 words): alone 2.3 %" in out and f"(its guard {DEVICE_GUARD})" in out
    assert "13.6 % (+11.4 points), as the device transcribes it" in out
    assert "(the VAD's view) 18.2 % (+15.9 points)" in out and "not ducked 95.5 %" in out


def test_the_wer_check_prints_the_short_barge_ins_on_a_line_of_their_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The short barge-ins (``COMMANDS``) are counted apart from the recorded sentence and printed on
    a line that names them; ``--no-commands`` leaves them out."""
    import argparse

    from audio.tools.bench_duplex import (
        COMMANDS,
        ONSET_VIEW,
        BargeInFigures,
        EchoFigures,
        WerFigures,
        print_tables,
        register,
    )

    assert COMMANDS and all(text.endswith((".", "?")) for text in COMMANDS)
    sentence = WerFigures({"alone": 0, "ducked": 1, "gated": 2, "over": 10, ONSET_VIEW: 1}, 22)
    short = WerFigures({"alone": 0, "ducked": 5, "gated": 6, "over": 20}, 31, what="short barge-ins")
    short.add(WerFigures({"alone": 1, "ducked": 3, "gated": 3, "over": 19}, 31))
    assert (short.errors["ducked"], short.words, short.what) == (8, 62, "short barge-ins")
    echo = EchoFigures({"full": [45.0]}, {("full", "gate"): 0}, 100, [0.1])
    print_tables(echo, BargeInFigures({"gate": [0.2]}, {"gate": 0}), sentence, short)
    out = capsys.readouterr().out
    assert "WER of the user's words (22 words): alone 0.0 %" in out
    assert "WER of short barge-ins (62 words): alone 1.6 %" in out
    assert "12.9 % (+11.3 points), as the device transcribes it" in out
    assert (
        "the reply ducked from the user's first word (a detection with no delay) 4.5 % (+4.5 points)" in out
    )
    assert out.count("first word") == 1  # a view the figures lack is not printed

    parser = argparse.ArgumentParser()
    bench = parser.add_subparsers().add_parser("bench").add_subparsers()
    register(bench, bench)
    assert parser.parse_args(["bench", "duplex", "--no-commands"]).no_commands
    assert not parser.parse_args(["bench", "duplex"]).no_commands


def test_the_wer_check_prints_other_duck_depths_beside_the_devices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--duck-db``: each other depth is a view of its own, pooled like the rest and printed beside
    the device's depth; the device's depth is not run twice; a depth outside ``hearing.duck_db``'s
    range is refused."""
    import argparse

    from audio.tools.bench_duplex import (
        WerFigures,
        duck_view,
        register,
    )

    pooled = WerFigures(
        {"alone": 1, "ducked": 6, "gated": 8, "over": 40, duck_view(-30.0): 2}, 22, duck_db=-12.0
    )
    pooled.add(WerFigures({"alone": 1, "ducked": 4, "gated": 2, "over": 40, duck_view(-30.0): 0}, 22))
    assert pooled.errors[duck_view(-30.0)] == 2 and pooled.words == 44
    out = _wer_printed(pooled, capsys)
    assert (
        "ducked by -12 dB (hearing.duck_db) and by other depths: ducked 22.7 % (+18.2 points); ducked -30 dB 4.5 % (+0.0 points)"
        in out
    )
    assert "other depths" not in _wer_printed(WerFigures(), capsys)  # none asked for: the line is left out

    parser = argparse.ArgumentParser()
    bench = parser.add_subparsers().add_parser("bench").add_subparsers()
    register(bench, bench)
    assert parser.parse_args(["bench", "duplex", "--duck-db=-20,-30"]).duck_db == (-20.0, -30.0)
    assert parser.parse_args(["bench", "duplex"]).duck_db == ()
    for bad in ("-70", "6", "loud"):
        with pytest.raises(SystemExit):
            parser.parse_args(["bench", "duplex", f"--duck-db={bad}"])


def test_the_bench_takes_at_least_one_set_of_replies() -> None:
    import argparse

    from audio.tools.bench_duplex import register

    parser = argparse.ArgumentParser()
    bench = parser.add_subparsers().add_parser("bench").add_subparsers()
    register(bench, bench)
    assert parser.parse_args(["bench", "duplex", "--sets", "3"]).sets == 3
    with pytest.raises(SystemExit):
        parser.parse_args(["bench", "duplex", "--sets", "0"])


def test_the_bench_runs_the_guards_it_is_given(capsys: pytest.CaptureFixture[str]) -> None:
    """``--guards``: names the bench reads, in the order given; an unknown one is refused."""
    import argparse

    from audio.tools.bench_duplex import GUARDS, BargeInFigures, EchoFigures, print_tables, register

    parser = argparse.ArgumentParser()
    bench = parser.add_subparsers().add_parser("bench").add_subparsers()
    register(bench, bench)
    assert parser.parse_args(["bench", "duplex"]).guards == GUARDS
    chosen = parser.parse_args(["bench", "duplex", "--guards", "strict+gate, strict90+gate~20"]).guards
    assert chosen == ("strict+gate", "strict90+gate~20")
    for bad in ("strict+gate,gate/twelve", ","):
        with pytest.raises(SystemExit):
            parser.parse_args(["bench", "duplex", "--guards", bad])
    echo = EchoFigures({"full": [45.0]}, {("full", g): 1 for g in chosen}, 100, [0.1])
    barge = BargeInFigures({g: [0.2, None] for g in chosen}, dict.fromkeys(chosen, 0))
    print_tables(echo, barge, None)  # the tables hold the guards measured, and only them
    out = capsys.readouterr().out
    assert "false/100 strict90+gate~20" in out and "false/100 gate/12dB" not in out
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("guard"))
    rows = [line.split()[0] for line in lines[header + 1 : header + 3]]
    assert rows == list(chosen)


def test_each_duck_depth_is_its_own_view_of_the_same_trial() -> None:
    """``_wer_views`` with another depth: one more view, of the same span, ducked from the same
    moment by that depth (not the device's), beside the device's ducked and gated views; with the
    early duck on, "ducked" is from the early duck and one more view from the confirmed start."""
    from audio.hearing.settings import HearingSettings
    from audio.tools.bench_duplex import (
        CONFIRMED_VIEW,
        ONSET_VIEW,
        _sentence,
        _wer_views,
        conditions,
        duck_view,
        synthesise_replies,
    )
    from tests.audio.conftest import HEARING_SPEECH_DIR

    replies = synthesise_replies(2)
    room = next(c for c in conditions() if c.echo_db == 0.0 and c.delay_ms == 40.0)
    settings = HearingSettings(early_duck_speech_ms=60)  # the early duck on (off by default)
    # Piper samples the replies' timing afresh each run: in about one trial in twenty (1 of 24) the
    # first voiced frames come with the confirmed start (no early duck before it). The first of three
    # trials (other replies first, other noise) where the device ducked early is the one looked at.
    for k in range(3):
        views = _wer_views(replies, _sentence(HEARING_SPEECH_DIR), -6.0, k, room, settings, (-40.0,))
        if not np.array_equal(views[CONFIRMED_VIEW], views["ducked"]):
            break
    assert set(views) == {"alone", "over", "ducked", "gated", ONSET_VIEW, CONFIRMED_VIEW, duck_view(-40.0)}
    assert len({len(v) for k, v in views.items() if k != "alone"}) == 1  # the same span of the trial
    # The reply was ducked (a start was detected over it), and by another depth in the extra view.
    assert not np.array_equal(views["ducked"], views["over"])
    assert not np.array_equal(views[duck_view(-40.0)], views["ducked"])
    # Ducked from the user's first word, before the start was detected: another signal again.
    assert not np.array_equal(views[ONSET_VIEW], views["ducked"])
    # The device ducks early (its first voiced frames): ducked from the confirmed start is another.
    assert not np.array_equal(views[CONFIRMED_VIEW], views["ducked"])
    no_early = _wer_views(
        replies, _sentence(HEARING_SPEECH_DIR), -6.0, k, room, replace(settings, early_duck_speech_ms=0)
    )
    assert CONFIRMED_VIEW not in no_early and np.array_equal(no_early["ducked"], views[CONFIRMED_VIEW])


def test_over_a_weak_canceller_each_depth_is_a_view_from_where_the_utterance_begins() -> None:
    """``_wer_views`` with a weak canceller: one view per depth (not ducked, ``duck_db``,
    ``duck_weak_db``, the others asked for), all of one span that begins where the device's utterance
    would (the start detected over the weak canceller, less the speech it needed and the pre-roll),
    the reply turned down more the deeper the depth."""
    from audio.hearing.settings import HearingSettings
    from audio.hearing.vad import frame_level_db
    from audio.tools.bench_duplex import (
        CONFIRMED_VIEW,
        ONSET_VIEW,
        _sentence,
        _wer_views,
        conditions,
        synthesise_replies,
        weak_depths,
        weak_view,
    )
    from tests.audio.conftest import HEARING_SPEECH_DIR

    settings = HearingSettings()
    assert weak_depths(settings, (-45.0, -18.0)) == (0.0, -18.0, -30.0, -45.0)
    replies = synthesise_replies(2)
    room = next(c for c in conditions() if c.echo_db == 0.0 and c.delay_ms == 40.0)
    sentence = _sentence(HEARING_SPEECH_DIR)
    views = _wer_views(replies, sentence, -6.0, 0, room, settings, (), (6.0, weak_depths(settings)))
    weak = [weak_view(db) for db in weak_depths(settings)]
    assert set(views) == {"alone", "over", "ducked", "gated", ONSET_VIEW, *weak}
    assert CONFIRMED_VIEW not in views  # the early duck is off by default: "ducked" is from the start
    assert len({len(views[v]) for v in weak}) == 1
    # Shorter than the user's span: the start over a weak canceller comes later than the sentence's.
    assert len(views[weak[0]]) < len(views["ducked"])
    # The user is as loud as what the weak canceller leaves of the echo: turned down, it is quieter.
    levels = [frame_level_db(views[v]) for v in weak]
    assert all(levels[0] > level + 0.5 for level in levels[1:]), levels
    assert not any(np.array_equal(views[a], views[b]) for a, b in itertools.pairwise(weak))


def test_the_weak_cancellers_views_are_printed_on_a_line_of_their_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Pooled like the rest, printed on their own line naming the limit and the device's depth over
    it; ``--no-weak`` leaves them out; the utterance's span begins at the detected start less the
    speech it needed and the pre-roll, never before the user's span."""
    import argparse

    from audio.hearing.settings import HearingSettings
    from audio.tools.bench_duplex import (
        RATE,
        WerFigures,
        _utterance_from,
        register,
        weak_view,
    )

    views = {"alone": 1, "ducked": 2, "gated": 2, "over": 9, weak_view(0.0): 30, weak_view(-30.0): 4}
    pooled = WerFigures(dict(views), 22, duck_db=-18.0, limit_db=6.0, weak_db=-30.0, weak_below_db=20.0)
    pooled.add(WerFigures(dict(views), 22))
    out = _wer_printed(pooled, capsys)
    assert (
        "over a canceller limited to 6 dB (the device ducks by hearing.duck_weak_db, -30 dB, over one "
        "removing less than hearing.weak_canceller_db, 20 dB), from the start detected over it: "
        "not ducked 136.4 % (+131.8 points); "
        "ducked -30 dB 18.2 % (+13.6 points)"
    ) in out
    assert "other depths" not in out  # the weak views are not other depths of the full canceller
    parser = argparse.ArgumentParser()
    bench = parser.add_subparsers().add_parser("bench").add_subparsers()
    register(bench, bench)
    assert parser.parse_args(["bench", "duplex", "--no-weak"]).no_weak
    assert not parser.parse_args(["bench", "duplex"]).no_weak
    settings = HearingSettings(barge_in_speech_ms=120, pre_roll_ms=300)
    assert _utterance_from(2.0, settings, RATE) == int(1.58 * RATE)
    assert _utterance_from(1.2, settings, RATE) == RATE  # not before the user's span
    assert _utterance_from(None, settings, RATE) == RATE
