"""The early duck as ``bench duplex`` replays it (``audio.tools.bench_early_duck``), on synthetic
detections, and the bench's figures for it: the dips with nobody speaking, the onset → duck time."""

from __future__ import annotations

import pytest

from audio.tools.bench_early_duck import Detections, Dip, Stir, duck_from, false_dips


def test_a_stir_the_start_follows_within_the_release_is_when_the_reply_ducks() -> None:
    found = Detections(starts=[2.15], stirs=[Stir(at=2.09, voiced=2.03)])
    assert duck_from(found, 2.0, 0.3) == 2.09
    assert false_dips(found, 0.3) == []  # taken over by the start: not a dip
    # Released before the start came (a release shorter than the wait): the start ducks.
    assert duck_from(found, 2.0, 0.1) == 2.15
    assert false_dips(found, 0.1) == [Dip(2.09, 2.13)]
    assert duck_from(Detections(stirs=[Stir(2.09, 2.03)]), 2.0, 0.3) is None  # no start: no barge-in


def test_a_stir_no_start_follows_is_a_dip_and_a_stir_within_it_moves_its_release_on() -> None:
    found = Detections(stirs=[Stir(1.06, 1.0), Stir(1.2, 1.15), Stir(3.0, 2.95)])
    dips = false_dips(found, 0.3)
    assert dips == [Dip(1.06, 1.45), Dip(3.0, 3.25)]
    assert [round(d.end - d.start, 2) for d in dips] == [0.39, 0.25]


def test_only_the_start_after_the_user_began_counts() -> None:
    """An earlier false start (the device's own voice) is not the user's barge-in; an early duck
    that began just before the user's clip and that the start took over still counts from when it
    began (the device ducked then)."""
    found = Detections(starts=[0.5, 2.2], stirs=[Stir(0.44, 0.4), Stir(1.98, 1.95)])
    assert duck_from(found, 2.0, 0.3) == 1.98
    assert duck_from(found, 2.3, 0.3) is None


def test_the_bench_prints_the_dips_and_the_onset_to_duck_time(capsys: pytest.CaptureFixture[str]) -> None:
    from audio.tools.bench_duplex import BargeInFigures, EchoFigures, print_tables

    guards = ("strict+gate", "gate")
    echo = EchoFigures({"full": [45.0]}, {("full", g): 0 for g in guards}, 50, [0.1])
    echo.early_ms, echo.release_ms = 60, 300
    echo.dips[("full", "strict+gate")] = [0.25, 0.35]
    barge = BargeInFigures({g: [0.2, 0.18] for g in guards}, dict.fromkeys(guards, 0))
    barge.ducks = {"strict+gate": [0.12, 0.1], "gate": [0.2, 0.18]}
    other = BargeInFigures({g: [None] for g in guards}, dict.fromkeys(guards, 0), {g: [None] for g in guards})
    barge.add(other)
    assert barge.ducks["strict+gate"] == [0.12, 0.1, None]
    print_tables(echo, barge, None)
    out = capsys.readouterr().out
    assert "hearing.early_duck_speech_ms 60 ms, released after 300 ms" in out
    assert "strict+gate 4.0 (300 ms)" in out and "gate 0" not in out.split("Early duck")[1]
    row = next(line for line in out.splitlines() if line.startswith("strict+gate "))
    assert row.split()[-1] == "110"  # the median onset → duck, in ms
