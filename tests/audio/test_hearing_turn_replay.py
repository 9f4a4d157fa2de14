"""The offline replay of turn verdict rules (``audio.tools.bench_turns_replay``) on synthetic caches:
a rule ends a turn at the first pause it calls complete, a late answer to a pause the user spoke on
past decides nothing, and no "complete" at the last pause is a wait for the fallback."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from audio.hearing.settings import HearingSettings
from audio.hearing.speech_gate import SpeechGate
from audio.hearing.turn_model import SmartTurnModel, default_model_path
from audio.hearing.whisper_stt import WhisperTranscriber
from audio.tools.bench_turns import Clip
from audio.tools.bench_turns_replay import ASK_FRAMES, DECODE_FRAMES, Rule, extract_clip, replay_clip, score
from tests.audio.conftest import HEARING_SPEECH_DIR

FRAME_MS = 30


def _pause(
    run: int, resumed: bool, probs: dict[int, float], text: str, end_prob: float, utterance: int = 1
) -> dict[str, Any]:
    return {
        "utterance": utterance,
        "run": run,
        "resumed": resumed,
        "probs": {str(k): v for k, v in probs.items()},
        "model_ms": {str(k): 60.0 for k in probs},
        "decodes": {"3": {"text": text, "end_prob": end_prob, "decode_ms": 200.0}},
    }


def _clip(
    kind: str, pauses: list[dict[str, Any]], pause_s: float = 0.0, utterances: int = 1
) -> dict[str, Any]:
    return {"clip": f"x/{kind}", "kind": kind, "pause_s": pause_s, "utterances": utterances, "pauses": pauses}


HALF = _pause(30, True, {4: 0.9, 6: 0.95, 10: 0.97}, "He might even have been made amiable.", 0.3)
"""A first half: the model is sure, Whisper wrote a full stop, but hardly expected one."""
WHOLE = _pause(50, False, {4: 0.8, 6: 0.9, 10: 0.95}, "He might even have been made amiable himself.", 0.9)
OPEN_END = _pause(50, False, {4: 0.2, 6: 0.2, 10: 0.3}, "Feels like these days go on forever", 0.01)

WORDS_END = Rule(ask=4, decode=3, threshold=0.3, check="words+end", end_min=0.4, sure=1.01)
PUNCT = Rule(ask=4, decode=3, threshold=0.5, check="words+punctuation")


def test_the_end_probability_keeps_a_hesitation_whole_that_the_full_stop_splits() -> None:
    hesitation = _clip("hesitation", [HALF, WHOLE], pause_s=0.9)
    assert replay_clip(WORDS_END, hesitation, FRAME_MS).whole
    assert not replay_clip(PUNCT, hesitation, FRAME_MS).whole


def test_the_long_sentences_end_keeps_a_first_half_whole_and_lets_a_sure_sentence_end() -> None:
    """``Rule.long_end``: a first half of more than three words with an end probability under it
    (the model not sure) is kept whole; a whole sentence the model is ``long_sure`` of still ends."""
    half = _pause(30, True, {4: 0.9, 6: 0.9}, "Press star for help.", 0.55)
    rest = _pause(50, False, {4: 0.9, 6: 0.9}, "Press star for help or pound to exit.", 0.8)
    hesitation = _clip("hesitation", [half, rest], pause_s=0.9)
    assert not replay_clip(WORDS_END, hesitation, FRAME_MS).whole  # before: split at "help."
    long_end = replace(WORDS_END, long_end=0.6, long_sure=0.97)
    assert replay_clip(long_end, hesitation, FRAME_MS).whole
    sure = _clip("complete", [_pause(50, False, {4: 0.97, 6: 0.97}, "My favorite colors blue.", 0.52)])
    res = replay_clip(long_end, sure, FRAME_MS)
    assert res.whole and not res.fallback
    unsure = _clip("complete", [_pause(50, False, {4: 0.96, 6: 0.96}, "My favorite colors blue.", 0.52)])
    assert replay_clip(long_end, unsure, FRAME_MS).fallback
    assert "l0.6/0.97" in long_end.label() and "l0" not in WORDS_END.label()


def test_a_complete_turn_ends_at_its_last_pause_with_an_estimated_latency() -> None:
    res = replay_clip(WORDS_END, _clip("complete", [WHOLE]), FRAME_MS)
    assert res.whole and not res.fallback
    assert res.latency_ms is not None and 4 * FRAME_MS <= res.latency_ms <= 3 * FRAME_MS + 200.0 + 1e-9


def test_an_unfinished_verdict_at_the_last_pause_waits_for_the_fallback() -> None:
    res = replay_clip(WORDS_END, _clip("complete", [OPEN_END]), FRAME_MS)
    assert res.fallback and res.latency_ms is None


def test_an_answer_after_speech_resumed_decides_nothing() -> None:
    short = _pause(5, True, {4: 0.99}, "Turn on the lights.", 0.99)  # resumed 30 ms after the question
    assert replay_clip(WORDS_END, _clip("complete", [short, WHOLE]), FRAME_MS).whole
    long = _pause(12, True, {4: 0.99, 6: 0.99, 10: 0.99}, "Turn on the lights.", 0.99)
    assert not replay_clip(WORDS_END, _clip("complete", [long, WHOLE]), FRAME_MS).whole


def test_a_hesitation_the_fallback_already_split_is_never_whole() -> None:
    first = _pause(50, False, {4: 0.1, 6: 0.1, 10: 0.1}, "Had he married a more amiable woman", 0.01)
    second = _pause(50, False, {4: 0.9, 6: 0.9, 10: 0.9}, "still more respectable.", 0.9, utterance=2)
    assert not replay_clip(WORDS_END, _clip("hesitation", [first, second], 1.5, utterances=2), FRAME_MS).whole


def test_re_asking_later_in_the_pause_can_end_a_turn_the_first_answer_kept_open() -> None:
    slow = _pause(50, False, {4: 0.2, 6: 0.3, 10: 0.6}, "Turn on the lights.", 0.9)
    assert replay_clip(WORDS_END, _clip("complete", [slow]), FRAME_MS).fallback
    reask = Rule(ask=4, reask=(10,), decode=3, threshold=0.5, check="words+end", end_min=0.4, sure=1.01)
    assert not replay_clip(reask, _clip("complete", [slow]), FRAME_MS).fallback


def test_the_patient_check_ends_a_sentence_the_late_one_leaves_at_its_longer_silence() -> None:
    unsure = _pause(50, False, {4: 0.05, 6: 0.05, 10: 0.05}, "Maybe the fitness one.", 0.69)
    late = replace(WORDS_END, late=13, late_end=0.8)
    assert replay_clip(late, _clip("complete", [unsure]), FRAME_MS).fallback
    patient = replace(late, patient=23, patient_end=0.6)
    res = replay_clip(patient, _clip("complete", [unsure]), FRAME_MS)
    assert not res.fallback and res.latency_ms == 23 * FRAME_MS
    half = _pause(20, True, {4: 0.05, 6: 0.05, 10: 0.05}, "That feature is not available.", 0.7)
    assert replay_clip(patient, _clip("hesitation", [half, WHOLE], pause_s=0.6), FRAME_MS).whole
    long_half = replace_pause(half, run=35)
    assert not replay_clip(patient, _clip("hesitation", [long_half, WHOLE], pause_s=1.2), FRAME_MS).whole


def replace_pause(pause: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**pause, **changes}


def test_the_hold_delays_a_complete_verdict_and_speech_within_it_keeps_the_turn_open() -> None:
    comma = _pause(7, True, {3: 0.9, 6: 0.9}, "Yes.", 0.9)  # "Yes, please.": a 210 ms comma
    early = replace(WORDS_END, ask=3)  # its answer by 190 ms
    assert not replay_clip(early, _clip("complete", [comma, WHOLE]), FRAME_MS).whole
    held = replace(early, hold=8)
    assert replay_clip(held, _clip("complete", [comma, WHOLE]), FRAME_MS).whole
    res = replay_clip(replace(held, ask=4), _clip("complete", [WHOLE]), FRAME_MS)
    assert res.latency_ms is not None and res.latency_ms >= 8 * FRAME_MS


def test_score_counts_turns_and_hesitations_up_to_the_limit() -> None:
    clips = [
        _clip("complete", [WHOLE]),
        _clip("complete", [OPEN_END]),
        _clip("hesitation", [HALF, WHOLE], pause_s=0.9),
        _clip("hesitation", [HALF, WHOLE], pause_s=1.5),
        _clip("fragment", [OPEN_END]),  # a prompt fragment waits for the fallback, and is no turn
    ]
    row = score(WORDS_END, clips, FRAME_MS)
    assert (row["turns"], row["fallback"], row["split"], row["hes"], row["whole"]) == (2, 1, 0, 1, 1)
    assert replay_clip(WORDS_END, clips[-1], FRAME_MS).kind == "fragment"


def test_extraction_caches_every_pause_of_a_real_sentence(hearing_transcriber: WhisperTranscriber) -> None:
    model = SmartTurnModel(default_model_path())
    model.load()
    from faster_whisper import decode_audio

    jfk = np.asarray(decode_audio(str(HEARING_SPEECH_DIR / "jfk/jfk.flac"), 16000), np.float32)
    base = HearingSettings()
    settings = replace(
        base,
        turn_detector="smart_turn",
        turn_pause_ms=ASK_FRAMES[0] * base.block_ms,
        turn_ask_ms=0,
        turn_decode_ms=0,
    )
    stt = SpeechGate(hearing_transcriber, base.tone_gate_share)
    clip = Clip("jfk", "ask not what your country can do for you", jfk, "complete")
    row = extract_clip(clip, settings, stt, model, np.random.default_rng(0))
    assert row["utterances"] == 1 and row["pauses"], row
    last = row["pauses"][-1]
    assert not last["resumed"] and last["run"] >= ASK_FRAMES[-1]
    assert sorted(last["probs"]) == sorted(ASK_FRAMES)
    assert all(0.0 <= p <= 1.0 for p in last["probs"].values())
    assert sorted(last["decodes"]) == sorted(DECODE_FRAMES)
    assert all("country" in d["text"].lower() for d in last["decodes"].values())
    # Every earlier pause was spoken on past: asked only at the silences it lasted.
    for p in row["pauses"][:-1]:
        assert p["resumed"] and all(int(k) <= p["run"] for k in p["probs"])


def test_the_short_hold_keeps_first_words_before_a_comma_and_ends_a_short_answer_later() -> None:
    comma = _pause(10, True, {4: 0.9}, "No.", 0.65)  # "No, the fitness one.": a 300 ms comma
    two = _pause(11, True, {4: 0.99}, "Sure thing.", 0.6)  # "Sure thing, let's do the animal quiz."
    held = replace(WORDS_END, hold=8)
    short = replace(held, short_hold=13)
    for first in (comma, two):
        assert not replay_clip(held, _clip("complete", [first, WHOLE]), FRAME_MS).whole
        assert replay_clip(short, _clip("complete", [first, WHOLE]), FRAME_MS).whole
    alone = _pause(50, False, {4: 0.9}, "No.", 0.65)  # "No." said alone: ends at the short hold
    res = replay_clip(short, _clip("complete", [alone]), FRAME_MS)
    assert not res.fallback and res.latency_ms == 13 * FRAME_MS
    # "Apple River Chair" alone: no end probability at all, a sure model; ends at the short hold.
    listed = _pause(50, False, {4: 0.97}, "Apple River Chair", 0.0)
    res = replay_clip(short, _clip("complete", [listed]), FRAME_MS)
    assert not res.fallback and res.latency_ms == 13 * FRAME_MS
    # Sentences of more words keep the plain hold.
    assert replay_clip(short, _clip("complete", [WHOLE]), FRAME_MS).latency_ms == 3 * FRAME_MS + 200.0


def test_the_late_check_of_two_words_waits_for_the_short_hold() -> None:
    """ "Okay, thanks." (the model: unfinished; Whisper's end 0.75): the late check ends it, at the
    later of the late silence and the short hold."""
    thanks = _pause(50, False, {4: 0.1}, "Okay, thanks.", 0.75)
    late = replace(WORDS_END, hold=8, late=10, late_end=0.8)
    res = replay_clip(late, _clip("complete", [thanks]), FRAME_MS)
    assert not res.fallback and res.latency_ms == 10 * FRAME_MS
    res = replay_clip(replace(late, short_hold=13), _clip("complete", [thanks]), FRAME_MS)
    assert not res.fallback and res.latency_ms == 13 * FRAME_MS
    assert replay_clip(replace(late, late=0), _clip("complete", [thanks]), FRAME_MS).fallback
