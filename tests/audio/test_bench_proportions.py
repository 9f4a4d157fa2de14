"""The interval benchmarks print beside a share (``audio.tools.proportions``): known values of the
Wilson score interval, its edges, and the barge-in table printing it."""

from __future__ import annotations

import pytest

from audio.tools.proportions import grouped_interval_pct, interval_pct, wilson_interval


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


def test_trials_in_groups_that_move_together_count_as_their_groups() -> None:
    """The bench's hesitations: 20 sentences, each cut at 0.6, 0.9 and 1.2 s."""
    # Every sentence's three pauses agree: 15 whole sentences of 20 is the whole story.
    assert grouped_interval_pct(45, 60, 20) == interval_pct(15, 20)
    # The stop's run (46 of 60): wider than the 60 clips' own interval, around the same share.
    grouped = [float(x) for x in grouped_interval_pct(46, 60, 20).split("-")]
    clips = [float(x) for x in interval_pct(46, 60).split("-")]
    assert grouped[0] < clips[0] < 100 * 46 / 60 < clips[1] < grouped[1]
    assert grouped_interval_pct(46, 60, 60) == interval_pct(46, 60)  # one clip per group
    assert grouped_interval_pct(46, 60, 90) == interval_pct(46, 60)  # never narrower than the clips'
    assert grouped_interval_pct(0, 0, 0) == "0.0-100.0"
    with pytest.raises(ValueError):
        grouped_interval_pct(61, 60, 20)


def test_the_barge_in_table_prints_the_interval_of_its_share(capsys: pytest.CaptureFixture[str]) -> None:
    from audio.tools.bench_duplex import BargeInFigures, _print_barge_in

    latencies: list[float | None] = [0.2 for _ in range(38)]
    latencies += [0.5, None]
    _print_barge_in(BargeInFigures({"gate": latencies}, {"gate": 0}), ["gate"])
    row = capsys.readouterr().out.splitlines()[-1].split()
    assert row[:3] == ["gate", "95.0", "83.5-98.6"], row
