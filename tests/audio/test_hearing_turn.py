"""The turn verdict: the model's probability weighed with the speculative transcript's last words."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from audio.hearing.turn import (
    END_MIN,
    LONG_END_MIN,
    LONG_SURE,
    ONE_WORD_SURE,
    OPEN_THRESHOLD,
    SHORT_LATE_END,
    SHORT_SURE,
    late_complete,
    short_sure,
    short_text,
    text_hint,
    turn_complete,
    word_count,
)


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("Turn on the lights.", "final"),
        ("What time is it?", "final"),
        ("Stop!", "final"),
        ("Can we do the", "unfinished"),
        ("I walked out of.", "unfinished"),  # Whisper's full stop does not make "of" an ending
        ("the wind from the North which", "unfinished"),
        ("and so my fellow Americans,", "open"),
        ("I was thinking...", "open"),
        ("Turn it off", "open"),
        ("Actually.", "unfinished"),  # a word that opens a turn, alone, before a pause
        ("Um, well...", "unfinished"),
        ("Hmm.", "unfinished"),
        ("I did, actually.", "final"),  # the same word ending a sentence
        ("I'm well.", "final"),
        ("So what?", "final"),
        ("No.", "final"),  # one-word answers are turns
        ("Wait.", "final"),
        ("  ", None),
    ],
)
def test_text_hint(text: str, hint: str | None) -> None:
    assert text_hint(text) == hint


def test_model_alone_uses_the_threshold() -> None:
    assert turn_complete(0.5, "Can we do the", 0.5, "off")
    assert not turn_complete(0.49, "Turn on the lights.", 0.5, "off")


def test_a_word_no_sentence_ends_on_keeps_the_turn_open() -> None:
    for check in ("words", "words+punctuation"):
        assert not turn_complete(0.99, "Can we do the", 0.5, check)
        assert turn_complete(0.6, "Turn on the lights.", 0.5, check)


def test_a_turn_opener_alone_waits_for_more_whatever_the_model_and_decoder_say() -> None:
    # make demo's barge-in "Actually, please stop the story." once ended at the comma as "Actually.".
    for check in ("words", "words+punctuation", "words+end"):
        assert not turn_complete(0.99, "Actually.", 0.3, check, end_prob=0.99)
    assert turn_complete(0.99, "Actually, stop.", 0.3, "words+end", end_prob=0.99)
    assert turn_complete(0.99, "No.", 0.3, "words+end", end_prob=0.99)


@pytest.mark.parametrize(
    ("text", "words", "short"),
    [
        ("No.", 1, True),
        ("Wait...", 1, True),
        ("okay,", 1, True),
        ("Press 6.", 2, True),
        ("Yes, please.", 2, True),
        ("Apple River Chair", 3, True),
        ("x-ray", 2, True),
        ("Let's do story time.", 4, False),
        ("", 0, False),
        (None, 0, False),
    ],
)
def test_short_text(text: str | None, words: int, short: bool) -> None:
    assert word_count(text) == words
    assert short_text(text) is short


def test_a_sure_model_ends_a_short_turn_whatever_the_decoder_says() -> None:
    # "Wait." alone: Whisper often writes "Wait..." with end 0.24-0.30; the model says 0.98.
    assert turn_complete(ONE_WORD_SURE, "Wait...", 0.3, "words+end", end_prob=0.25)
    assert not turn_complete(ONE_WORD_SURE - 0.01, "Wait...", 0.3, "words+end", end_prob=0.25)
    # Two or three words need a surer model: "Apple River Chair" (end 0.00), "Sure thing..."
    assert short_sure("Apple River Chair") == short_sure("Sure thing...") == SHORT_SURE > ONE_WORD_SURE
    assert turn_complete(SHORT_SURE, "Apple River Chair", 0.3, "words+end", end_prob=0.0)
    assert not turn_complete(SHORT_SURE - 0.01, "Apple River Chair", 0.3, "words+end", end_prob=0.0)
    assert turn_complete(SHORT_SURE, "Sure thing...", 0.3, "words+end", end_prob=0.34)
    # Longer texts still need the decoder's end probability (the sure override stays off).
    assert short_sure("Wait for me there...") > 1.0
    assert not turn_complete(0.99, "Wait for me there...", 0.3, "words+end", end_prob=0.25)
    # A word that only opens a turn, or ends none, stays open.
    assert not turn_complete(0.99, "Actually...", 0.3, "words+end", end_prob=0.25)
    assert not turn_complete(0.99, "To the", 0.3, "words+end", end_prob=0.0)


def test_without_a_sentence_mark_the_model_must_be_surer() -> None:
    assert turn_complete(0.6, "and so my fellow Americans,", 0.5, "words")
    assert not turn_complete(0.6, "and so my fellow Americans,", 0.5, "words+punctuation")
    assert turn_complete(OPEN_THRESHOLD, "and so my fellow Americans,", 0.5, "words+punctuation")


def test_no_transcript_leaves_the_model_alone() -> None:
    assert turn_complete(0.7, None, 0.5, "words+punctuation")
    assert not turn_complete(0.3, "", 0.5, "words+punctuation")


def test_words_end_needs_the_decoder_to_expect_a_sentence_mark() -> None:
    # A first half the model calls complete, whose text the decoder would not end there: wait.
    assert not turn_complete(0.7, "Had he married a more amiable woman", 0.5, "words+end", end_prob=0.05)
    # The same probability on a sentence the decoder would end: complete at once.
    assert turn_complete(0.7, "Turn on the lights.", 0.5, "words+end", end_prob=0.8)
    # A text without a mark the decoder still expects to end (a Whisper that dropped the full stop).
    assert turn_complete(0.7, "Turn on the lights", 0.5, "words+end", end_prob=0.6, end_min=0.3)


def test_words_end_lets_a_sure_model_end_any_text_but_an_unfinished_one() -> None:
    assert turn_complete(
        0.95, "He might even have been made amiable", 0.5, "words+end", end_prob=0.01, sure=0.9
    )
    assert not turn_complete(
        0.89, "He might even have been made amiable", 0.5, "words+end", end_prob=0.01, sure=0.9
    )
    assert not turn_complete(0.99, "Can we do the", 0.5, "words+end", end_prob=0.99)


def test_a_longer_sentence_needs_a_surer_end_unless_the_model_is_sure() -> None:
    """More than three words: the decoder's end probability must reach ``LONG_END_MIN``, unless the
    model says ``LONG_SURE`` (the figures are the replayed caches' clips, docs/hearing.md)."""
    # First halves that read as sentences: an end probability of 0.5-0.6 no longer ends the turn.
    assert not turn_complete(
        0.68, "Please hold while I try to locate the person.", 0.3, "words+end", end_prob=0.59
    )
    assert not turn_complete(0.79, "Press 4 to remove the urgency.", 0.3, "words+end", end_prob=0.5)
    assert turn_complete(
        0.79, "Press 4 to remove the urgency.", 0.3, "words+end", end_prob=0.5, long_end_min=0.0
    )  # before
    # Whole sentences the decoder is as unsure of, the model sure of: they end as before (and so
    # does a first half the model is as sure of: "Press star for help." p 0.92-0.95).
    assert turn_complete(LONG_SURE, "My favorite colors blue.", 0.3, "words+end", end_prob=0.52)
    assert not turn_complete(LONG_SURE - 0.01, "My favorite colors blue.", 0.3, "words+end", end_prob=0.52)
    assert turn_complete(0.98, "Maybe later after my lunch.", 0.3, "words+end", end_prob=0.55)
    assert not turn_complete(0.98, "Maybe later after my lunch.", 0.3, "words+end", end_prob=END_MIN - 0.01)
    # The sure model is enough only where Whisper wrote the sentence mark: without it the decoder
    # has not read a sentence ("She had your dark soothing", the first half of "She had your dark
    # suit in greasy wash water all year", split a live bench's hesitation at p 0.99, end 0.47).
    assert not turn_complete(0.99, "She had your dark soothing", 0.3, "words+end", end_prob=0.47)
    assert not turn_complete(0.99, "She had your dark soothing...", 0.3, "words+end", end_prob=0.47)
    assert turn_complete(0.99, "She had your dark soothing.", 0.3, "words+end", end_prob=0.47)
    assert turn_complete(0.99, "She had your dark soothing", 0.3, "words+end", end_prob=LONG_END_MIN)
    assert turn_complete(
        0.99, "She had your dark soothing", 0.3, "words+end", end_prob=0.47, long_end_min=0.0
    )  # turn_long_end = 0: the rule before
    # A sure end probability ends a longer sentence at the threshold, as before.
    assert turn_complete(0.3, "Your call is now first in line.", 0.3, "words+end", end_prob=LONG_END_MIN)
    assert not turn_complete(
        0.3, "Your call is now first in line.", 0.3, "words+end", end_prob=LONG_END_MIN - 0.01
    )
    # Three words and fewer keep END_MIN (their own sure answers and hold: "The short hold").
    assert turn_complete(0.5, "Yes, please.", 0.3, "words+end", end_prob=END_MIN)
    assert turn_complete(0.5, "Let's play cards.", 0.3, "words+end", end_prob=END_MIN)
    assert not turn_complete(0.5, "Let's play cards now.", 0.3, "words+end", end_prob=END_MIN)


def test_words_end_below_the_threshold_waits_whatever_the_decoder_says() -> None:
    assert not turn_complete(0.3, "Turn on the lights.", 0.5, "words+end", end_prob=0.99)


def test_words_end_without_an_end_probability_is_words_punctuation() -> None:
    for p, text in [(0.6, "Turn on the lights."), (0.6, "and so my fellow"), (0.95, "and so my fellow")]:
        assert turn_complete(p, text, 0.5, "words+end") == turn_complete(p, text, 0.5, "words+punctuation")


@pytest.mark.parametrize(
    ("text", "end_prob", "done"),
    [
        ("He was not an ill disposed young man.", 0.85, True),
        ("He was not an ill disposed young man.", 0.79, False),  # the decoder not sure of the end
        ("Feels like these days go on forever", 0.95, False),  # no sentence mark
        ("I would like to go to the...", 0.95, False),  # an ellipsis
        ("Can we do the.", 0.95, False),  # a word no sentence ends on
        ("Can we do the fitness one?", 0.9, True),
        ("Can we do the fitness one?", None, False),  # no end probability (another engine)
        (None, 0.9, False),  # no transcript
        ("Up.", 0.95, False),  # a fragment (a garbled "Actually," said over the reply)
        ("Stop it now.", 0.95, True),  # three words
        ("Okay, thanks.", SHORT_LATE_END, True),  # two words: the decoder is less sure of their end
        ("Okay, thanks.", SHORT_LATE_END - 0.01, False),
        ("Stop it now.", SHORT_LATE_END, False),  # three words need the late end (0.8)
        ("Sounds good", 0.95, False),  # no sentence mark
    ],
)
def test_late_check_needs_a_finished_sentence_the_decoder_is_sure_of(
    text: str | None, end_prob: float | None, done: bool
) -> None:
    assert late_complete(text, end_prob, 0.8) is done


def test_bench_configs_name_the_late_check_and_the_decode_and_ask_pauses() -> None:
    from audio.hearing.settings import HearingSettings
    from audio.tools.bench_turns import parse_config

    base = HearingSettings()
    label, s = parse_config("smart_turn", base)
    tail = f"{base.turn_late_ms}:{base.turn_decode_ms}:{base.turn_ask_ms}:{base.turn_hold_ms}"
    assert label == f"smart_turn:words+end:0.3:120:{tail}"
    assert s.turn_late_ms == base.turn_late_ms and s.turn_decode_ms == base.turn_decode_ms
    label, s = parse_config("smart_turn:words+end:0.3:120:0", base)
    assert (
        label.endswith(f":0:0:{base.turn_ask_ms}:{base.turn_hold_ms}")
        and s.turn_late_ms == 0
        and s.turn_decode_ms == 0
    )
    label, s = parse_config("smart_turn:words+end:0.3:120:390:30:0", base)  # the decode at 30 ms
    assert (
        label.endswith(f":390:30:0:{base.turn_hold_ms}") and s.turn_decode_ms == 30 and s.turn_ask_ms == 0
    )  # asked at 120
    label, s = parse_config("smart_turn:words+end:0.3:120:390:0:60", base)  # the question at 60 ms
    assert label.endswith(f":390:0:60:{base.turn_hold_ms}") and s.turn_ask_ms == 60 and s.turn_decode_ms == 0
    label, s = parse_config("smart_turn:words+end:0.3:120:390:0:30:0", base)  # no hold: the pause's end
    assert label.endswith(":390:0:30:0") and s.turn_hold_ms == 0
    with pytest.raises(ValueError, match="turn_hold_ms"):
        parse_config("smart_turn:words+end:0.3:120:390:0:30:1500", base)  # at the fallback
    with pytest.raises(ValueError, match="turn_short_hold_ms"):
        parse_config("smart_turn:turn_short_hold_ms=1500", base)  # at the fallback
    assert parse_config("smart_turn:turn_short_hold_ms=0", base)[1].turn_short_floor_ms == base.turn_floor_ms
    with pytest.raises(ValueError, match="turn_ask_ms"):
        parse_config("smart_turn:words+end:0.3:120:390:0:150", base)  # after the pause's end
    with pytest.raises(ValueError, match="turn_late_ms"):
        parse_config("smart_turn:words+end:0.3:120:2000", base)  # past the fallback
    with pytest.raises(ValueError, match="turn_decode_ms"):
        parse_config("smart_turn:words+end:0.3:120:390:150", base)  # after the question
    label, s = parse_config("smart_turn:turn_fallback_ms=1200:words+end", base)  # any setting by name
    assert s.turn_fallback_ms == 1200 and s.turn_text_check == "words+end"
    assert label.endswith(":turn_fallback_ms=1200")
    label, s = parse_config("silence:end_silence_ms=500", base)
    assert (label, s.turn_detector, s.end_silence_ms) == ("silence:end_silence_ms=500", "silence", 500)
    with pytest.raises(ValueError, match="unknown"):
        parse_config("smart_turn:turn_patience=3", base)
    with pytest.raises(ValueError, match="turn_late_end"):  # checked like the config file
        parse_config("smart_turn:turn_late_end=1.5", base)
    assert parse_config("smart_turn:turn_late_ms=0", base)[1].turn_late_ms == 0  # by name: off
    assert parse_config("smart_turn:turn_long_end=0", base)[1].turn_long_end == 0.0  # the rule before
    with pytest.raises(ValueError, match="turn_long_end"):
        parse_config("smart_turn:turn_long_end=1.2", base)
    assert base.turn_long_end == LONG_END_MIN  # the settings' defaults are the rule's
    assert base.turn_long_sure == LONG_SURE
    with pytest.raises(ValueError, match="turn_long_sure"):
        parse_config("smart_turn:turn_long_sure=0", base)


def test_a_bench_config_can_run_with_the_blas_pool_as_the_baseline() -> None:
    from threadpoolctl import threadpool_info, threadpool_limits

    from audio.tools.bench_turns import BLAS_POOL_SUFFIX, _blas_pool, _blas_threads

    assert _blas_pool("silence") == ("silence", False)
    assert _blas_pool(f"smart_turn:words+end{BLAS_POOL_SUFFIX}") == ("smart_turn:words+end", True)

    def pools() -> list[int]:
        return [int(i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"]

    if (os.cpu_count() or 1) < 2:
        pytest.skip("OpenBLAS starts no more threads than cores")
    with threadpool_limits(limits=1, user_api="blas"):
        with _blas_threads(2):
            assert pools() and all(n == 2 for n in pools())
        assert all(n == 1 for n in pools())
        with _blas_threads(None):
            assert all(n == 1 for n in pools())


def test_the_bench_counts_a_complete_turn_of_two_sentences_that_came_in_two_as_cut() -> None:
    import numpy as np

    from audio.tools.bench_turns import Clip, Outcome, summary

    audio = np.zeros(160, np.float32)
    said = "No thanks. Good night."
    whole = Outcome(
        Clip("a", said, audio, "complete"), 1, ["No thanks, good night."], 0.3, 0.3, "turn_complete"
    )
    cut = Outcome(
        Clip("b", said, audio, "complete"), 2, ["No thanks.", "Good night."], 0.3, 0.3, "turn_complete"
    )
    hes = Outcome(Clip("c", said, audio, "hesitation", 0.6), 2, ["No thanks.", "Good night."])
    row = summary("smart_turn", [whole, cut, hes], [0.6])
    assert row["turns cut"] == "1/2" and row["whole@0.6s"] == "0/1" and row["WER"] == "0.0%"
    assert (
        row["whole<=1.2s"] == "0%" and row["whole 95 % interval"] == "0.0-79.3"
    )  # one hesitation says little


def test_the_bench_reports_prompt_fragments_apart_and_cuts_no_hesitation_from_them(tmp_path: Path) -> None:
    """A telephone prompt fragment the set takes for a sentence ("The estimated hold time is
    currently") runs as a ``fragment``: its wait for the fallback is no complete turn's; neither it
    nor a line of several sentences is cut for a hesitation, a one-sentence line is."""
    import numpy as np

    from audio.edges.wav import write_wav
    from audio.tools.bench_turns import (
        PROMPT_FRAGMENTS,
        SEVERAL_SENTENCES,
        Clip,
        Outcome,
        _what_to_look_at,
        build_clips,
        summary,
    )

    rate, rng = 16000, np.random.default_rng(3)
    words = [rng.normal(0, 0.1, int(0.25 * rate)).astype(np.float32) for _ in range(8)]
    gap = np.zeros(int(0.1 * rate), np.float32)
    speech = np.concatenate([np.concatenate([w, gap]) for w in words])  # 2.8 s: eight "words"
    fragment, several = "asterisk_en/queue-holdtime.wav", next(iter(SEVERAL_SENTENCES))
    rows = [
        (fragment, "The estimated hold time is currently"),
        (several, "press one to accept this recording press two to listen to it"),
        (
            "asterisk_en/pls-hold-while-try.wav",
            "please hold while I try to locate the person you are calling",
        ),
    ]
    lines = ["relpath\ttranscript\tkind"]
    for relpath, text in rows:
        (tmp_path / relpath).parent.mkdir(parents=True, exist_ok=True)
        write_wav(tmp_path / relpath, speech, rate)
        lines.append(f"{relpath}\t{text}\tspeech")
    (tmp_path / "manifest.tsv").write_text("\n".join(lines) + "\n")

    clips = build_clips(tmp_path, 10, 10, [0.6], piper=False)
    kinds = {c.name: c.kind for c in clips}
    assert fragment in PROMPT_FRAGMENTS and kinds[fragment] == "fragment"
    assert kinds[several] == kinds[rows[2][0]] == "complete"
    assert [c.name for c in clips if c.kind == "hesitation"] == [f"{rows[2][0]}+0.6s"]

    audio = np.zeros(160, np.float32)
    waited = Outcome(Clip(fragment, rows[0][1], audio, "fragment"), 1, [rows[0][1]], 1.8, 1.5, "silence")
    on_time = Outcome(
        Clip(several, rows[1][1], audio, "complete"), 1, [rows[1][1]], 0.3, 0.25, "turn_complete"
    )
    row = summary("smart_turn", [waited, on_time], [0.6])
    assert row["turns"] == "1" and row["fallback"] == "0/1" and row["median ms"] == "300"
    assert row["fragments waited"] == "1/1"
    assert _what_to_look_at(waited) == "fragment, end=silence" and _what_to_look_at(on_time) is None


def test_the_bench_counts_a_sentences_pauses_as_one_in_its_interval() -> None:
    """Two sentences, each at three pauses, one kept whole at all of them: the interval is one of
    two sentences', not three of six clips'."""
    import numpy as np

    from audio.tools.bench_turns import Clip, Outcome, summary
    from audio.tools.proportions import interval_pct

    audio = np.zeros(160, np.float32)
    outcomes = [
        Outcome(Clip(f"{name}+{p:.1f}s", "Can we do the fitness one?", audio, "hesitation", p), n, ["x"] * n)
        for name, n in [("a.wav", 1), ("b.wav", 2)]
        for p in (0.6, 0.9, 1.2)
    ]
    row = summary("smart_turn", outcomes, [0.6, 0.9, 1.2])
    assert row["whole<=1.2s"] == "50%"
    assert row["whole 95 % interval"] == interval_pct(1, 2) != interval_pct(3, 6)


def test_the_bench_pools_its_rounds_and_alternates_their_order() -> None:
    import numpy as np

    from audio.tools.bench_turns import Clip, ConfigRuns, Outcome, round_order

    # The order flips every other round: a machine that slows down during the run favours none.
    assert [round_order(["a", "b", "c"], r) for r in range(3)] == [
        ["a", "b", "c"],
        ["c", "b", "a"],
        ["a", "b", "c"],
    ]
    audio = np.zeros(160, np.float32)

    def turn(latency_s: float) -> Outcome:
        return Outcome(
            Clip("x", "Yes.", audio, "complete"), 1, ["Yes."], latency_s, latency_s, "turn_complete"
        )

    run = ConfigRuns("smart_turn")
    run.add([turn(0.2), turn(0.3), turn(0.4)], cpu_s=1.5)  # round 1: median 300 ms
    run.add([turn(0.5), turn(0.6), turn(0.7)], cpu_s=3.0)  # round 2: median 600 ms
    row = run.row([])
    # Pooled: the median of all six turns; the CPU per utterance over both rounds; each round's median.
    assert row["turns"] == "6" and row["median ms"] == "450"
    assert row["cpu/utt"] == "750 ms" and row["median by round"] == "300/600"
    one = ConfigRuns("silence")
    one.add([turn(0.2)], cpu_s=0.1)
    assert "median by round" not in one.row([])


def test_replaying_an_asks_dump_weighs_the_end_probability_it_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``bench turns --replay`` on an ``--asks`` dump: ``words+end`` reads the decoder's end
    probability from the dump, so a first half written with a full stop but an end probability of
    0.3 is kept whole where the model alone (and the text's own full stop) splits it."""
    import json

    from audio.tools.bench_turns import evaluate_policies

    rows = [
        {"kind": "complete", "pause_s": 0.0, "utterances": 1, "asks": [[0.9, "Turn on the lights.", 0.9]]},
        {
            "kind": "hesitation",
            "pause_s": 0.9,
            "utterances": 1,
            "asks": [
                [0.9, "He might even have been made amiable.", 0.3],
                [0.9, "He might even… himself.", 0.9],
            ],
        },
    ]
    dump = tmp_path / "asks.jsonl"
    dump.write_text("".join(json.dumps(r) + "\n" for r in rows))
    evaluate_policies(dump)
    lines = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    table = {
        (check, threshold): (fallback, split, whole) for check, threshold, fallback, split, whole in lines
    }
    assert table[("words+end", "0.3")] == ("0/1", "0/1", "1/1")
    assert table[("off", "0.3")] == ("0/1", "0/1", "0/1")
    assert table[("words+punctuation", "0.3")] == ("0/1", "0/1", "0/1")
