"""The interval benchmarks print beside a share (``audio.tools.proportions``): known values of the
Wilson score interval, its edges, and the barge-in table printing it."""

from __future__ import annotations

import pytest

from audio.tools.proportions import interval_pct, wilson_interval


def test_the_wilson_interval_matches_known_values() -> None:
    low, high = wilson_interval(38, 40)  # one run's 95 % within 300 ms
    assert low == pytest.approx(0.8350, abs=5e-4) and high == pytest.approx(0.9862, abs=5e-4)
    low, high = wilson_interval(0, 72)  # no false start in 72 replies: still up to ~5 per 100
    assert low == 0.0 and high == pytest.approx(0.0507, abs=5e-4)
    assert wilson_interval(40, 40)[1] == 1.0 and wilson_interval(40, 40)[0] < 1.0


def test_more_trials_narrow_the_interval_around_the_share() -> None:
    small, large = wilson_interval(19, 20), wilson_interval(190, 200)
    assert small[0] < large[0] < 0.95 < large[1] < small[1]


def test_no_trials_say_nothing_and_impossible_counts_are_refused() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval(5, 4)
    assert interval_pct(38, 40) == "83.5-98.6"


def test_the_barge_in_table_prints_the_interval_of_its_share(capsys: pytest.CaptureFixture[str]) -> None:
    from audio.tools.bench_duplex import BargeInFigures, _print_barge_in

    latencies: list[float | None] = [0.2 for _ in range(38)]
    latencies += [0.5, None]
    _print_barge_in(BargeInFigures({"gate": latencies}, {"gate": 0}), ["gate"])
    row = capsys.readouterr().out.splitlines()[-1].split()
    assert row[:3] == ["gate", "95.0", "83.5-98.6"], row
