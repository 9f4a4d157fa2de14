"""Turn-taking through the Listener at real time: the real Smart Turn model and real Whisper on a real
recording (JFK), the speculative decode reused or discarded, and no question without speech."""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field, replace

import numpy as np
import pytest

from audio.edges.capture import SimulatedMicrophone
from audio.edges.wav import FloatArray
from audio.events import AudioEvent, SpeechEnded, SpeechStarted, Transcribed, UtteranceFailed
from audio.hearing.listener import Listener
from audio.hearing.settings import HearingSettings
from audio.hearing.stt import CancelToken, DecodeCancelled, Transcription
from audio.hearing.turn import late_complete, short_text, text_hint, turn_complete, word_count
from audio.hearing.turn_model import SmartTurnModel, TurnVerdict, default_model_path
from audio.hearing.whisper_stt import WhisperTranscriber
from audio.tools.bench_turns import hesitation
from tests.audio.conftest import HEARING_SPEECH_DIR, hearing_silence
from tests.scripts.loader import load_script

FALLBACK_MS = 6000
"""Long, so that the verdict (which waits for the speculative decode) comes before it on a loaded
machine too."""


@dataclass
class Counting:
    """The real transcriber, counting its decodes."""

    inner: WhisperTranscriber
    calls: list[int] = field(default_factory=list)
    tokens: list[CancelToken] = field(default_factory=list)
    """The cancel tokens of the speculative decodes, in order."""
    cancelled: list[int] = field(default_factory=list)
    """Decodes (index in ``calls``) that stopped on their token."""

    def load(self) -> None:
        self.inner.load()

    def transcribe(
        self, samples: FloatArray, speech_ratio: float | None = None, cancel: CancelToken | None = None
    ) -> Transcription:
        self.calls.append(len(samples))
        if cancel is not None:
            self.tokens.append(cancel)
        try:
            return self.inner.transcribe(samples, speech_ratio, cancel)
        except DecodeCancelled:
            self.cancelled.append(len(self.calls) - 1)
            raise

    def set_language(self, lang: str) -> None:
        self.inner.set_language(lang)


@dataclass
class CountingModel:
    """The real end-of-turn model, counting its runs."""

    inner: SmartTurnModel
    calls: int = 0

    def predict(self, audio: FloatArray) -> TurnVerdict:
        self.calls += 1
        return self.inner.predict(audio)


class Events:
    def __init__(self) -> None:
        self.events: list[AudioEvent] = []
        self.at: list[float] = []

    def __call__(self, ev: AudioEvent) -> None:
        self.events.append(ev)
        self.at.append(time.time())

    def of(self, kind: type) -> list[AudioEvent]:
        return [e for e in self.events if isinstance(e, kind)]

    async def settle(self, mic: SimulatedMicrophone, timeout: float = 60.0) -> None:
        """Until everything fed was heard and every utterance is closed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            open_ = len(self.of(SpeechStarted)) - len(self.of(Transcribed)) - len(self.of(UtteranceFailed))
            if not mic.pending_samples and open_ == 0:
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"not settled: {self.events}")


@pytest.fixture(scope="module")
def turn_model() -> SmartTurnModel:
    model = SmartTurnModel(default_model_path())
    model.load()
    return model


@pytest.fixture(scope="module")
def jfk() -> FloatArray:
    """ "ask not what your country can do for you, ask what you can do for your country." (JFK from
    3.0 s, inside the pause after "And so my fellow Americans," -- which the model, with Whisper's
    "And so my fellow Americans.", takes for a finished turn: p 0.92; docs/hearing.md)."""
    from faster_whisper import decode_audio

    audio = np.asarray(decode_audio(str(HEARING_SPEECH_DIR / "jfk/jfk.flac"), 16000), np.float32)
    return audio[3 * 16000 :]


async def listen(
    audio: FloatArray,
    transcriber: Counting,
    model: CountingModel,
    fallback_ms: int = FALLBACK_MS,
    noise_db: float = -65.0,
    threshold: float | None = None,
    late_ms: int | None = None,
    decode_ms: int | None = None,
    ask_ms: int | None = None,
    short_hold_ms: int | None = None,
    long_end: float | None = None,
    long_sure: float | None = None,
) -> tuple[Listener, Events]:
    settings = HearingSettings(turn_detector="smart_turn", turn_fallback_ms=fallback_ms)
    if long_end is not None:
        settings = replace(settings, turn_long_end=long_end)
    if long_sure is not None:
        settings = replace(settings, turn_long_sure=long_sure)
    if decode_ms is not None:
        settings = replace(settings, turn_decode_ms=decode_ms)
    if ask_ms is not None:
        settings = replace(settings, turn_ask_ms=ask_ms)
    if threshold is not None:
        settings = replace(settings, turn_threshold=threshold)
    if late_ms is not None:
        settings = replace(settings, turn_late_ms=late_ms)
    if short_hold_ms is not None:
        settings = replace(settings, turn_short_hold_ms=short_hold_ms)
    mic = SimulatedMicrophone(speed=1.0, noise_db=noise_db)
    rec = Events()
    ids = itertools.count(1)
    listener = Listener(
        settings, mic, transcriber, rec, utterance_ids=lambda: f"u{next(ids)}", turn_model=model
    )
    await listener.open()
    await asyncio.sleep(0.3)
    mic.feed(np.concatenate([audio, hearing_silence(0.3)]))
    await rec.settle(mic)
    await listener.aclose()
    return listener, rec


@pytest.mark.parametrize("decode_ms", [30, 120])
async def test_real_sentence_ends_on_the_model_well_before_the_fallback_with_one_decode(
    hearing_transcriber: WhisperTranscriber, turn_model: SmartTurnModel, jfk: FloatArray, decode_ms: int
) -> None:
    """``turn_decode_ms`` 30 starts the speculative decode at the pause's first silent frame, before
    the model's question (``turn_pause_ms`` 120); 120 (as the default 0) starts it with the question."""
    stt, model = Counting(hearing_transcriber), CountingModel(turn_model)
    listener, rec = await listen(jfk, stt, model, decode_ms=decode_ms, ask_ms=0)  # asked at 120 ms
    (ended,) = rec.of(SpeechEnded)
    (done,) = rec.of(Transcribed)
    assert isinstance(ended, SpeechEnded) and isinstance(done, Transcribed)
    assert len(rec.of(SpeechStarted)) == 1 and ended.end == "turn_complete"
    # Ended by the model's verdict, so before the fallback silence ran out, whatever the machine's
    # load (the decode the verdict waits for took 0.3-2.4 s here).
    decided_ms = 1000 * (rec.at[rec.events.index(ended)] - ended.ts)
    assert decided_ms < FALLBACK_MS, f"ended {decided_ms:.0f} ms after the last word"
    assert "what your country" in done.text.lower() and "for your country" in done.text.lower()
    asks = list(listener.turn_asks)
    assert asks[-1].complete and all(not a.complete for a in asks[:-1])
    # The final pause was decoded once, and that decode is the transcript (every decode was a
    # speculative one, the last not told to stop); the decodes of earlier pauses (the user went on)
    # were dropped or left unused.
    assert model.calls == len(asks) and len(stt.calls) == len(stt.tokens), stt.calls
    assert not stt.tokens[-1].is_set()
    # What it decoded: the utterance with decode_ms of its last pause, where the published one
    # (``audio_ms``) holds at least the question's 120 ms of it and at most the post-roll (6 frames).
    s = HearingSettings()
    extra_ms = ended.audio_ms - stt.calls[-1] * 1000 / 16000
    post_ms = s.post_roll_ms // s.block_ms * s.block_ms
    assert s.turn_pause_ms - decode_ms - 1 <= extra_ms <= post_ms - decode_ms + 1, extra_ms


@pytest.mark.parametrize("ask_ms", [30, 60])
async def test_a_question_asked_early_ends_the_turn_with_its_own_decode_as_the_transcript(
    hearing_transcriber: WhisperTranscriber, turn_model: SmartTurnModel, jfk: FloatArray, ask_ms: int
) -> None:
    """``turn_ask_ms`` 30 (the default) or 60: the model and the decode start at the pause's 1st or
    2nd silent frame, on the audio the question at ``turn_pause_ms`` (120) would send (the pause's
    frames copied on); the "complete" verdict ends the turn and that decode is the transcript."""
    stt, model = Counting(hearing_transcriber), CountingModel(turn_model)
    listener, rec = await listen(jfk, stt, model, ask_ms=ask_ms)
    (ended,) = rec.of(SpeechEnded)
    (done,) = rec.of(Transcribed)
    assert isinstance(ended, SpeechEnded) and isinstance(done, Transcribed)
    assert len(rec.of(SpeechStarted)) == 1 and ended.end == "turn_complete"
    assert "what your country" in done.text.lower() and "for your country" in done.text.lower()
    asks = list(listener.turn_asks)
    assert asks[-1].complete and model.calls == len(asks) and len(stt.calls) == len(stt.tokens)
    assert not stt.tokens[-1].is_set()
    # The decoded audio held the question's 120 ms of the pause (ask_ms heard, the rest copied): the
    # published utterance, which ended later, holds at most the post-roll more (a decode of what
    # ask_ms had heard would be 120-150 ms short of it, the verdict taking over 150 ms here).
    s = HearingSettings()
    extra_ms = ended.audio_ms - stt.calls[-1] * 1000 / 16000
    post_ms = s.post_roll_ms // s.block_ms * s.block_ms
    assert -1 <= extra_ms <= post_ms - s.turn_pause_ms + 1, extra_ms


@pytest.mark.parametrize("pause_s", [1.2])
async def test_stretched_pause_is_one_utterance_and_one_transcript(
    hearing_transcriber: WhisperTranscriber, turn_model: SmartTurnModel, jfk: FloatArray, pause_s: float
) -> None:
    stt, model = Counting(hearing_transcriber), CountingModel(turn_model)
    stretched = hesitation(jfk, pause_s)  # the pause after "... can do for you," made 1.2 s long
    assert stretched is not None and len(stretched) > len(jfk)
    listener, rec = await listen(stretched, stt, model, fallback_ms=HearingSettings().turn_fallback_ms)
    assert len(rec.of(SpeechStarted)) == 1 and len(rec.of(SpeechEnded)) == 1
    (done,) = rec.of(Transcribed)
    assert isinstance(done, Transcribed)
    text = done.text.lower()
    assert "what your country" in text and "for your country" in text
    assert any(not a.complete for a in listener.turn_asks)  # asked at the hesitation: wait


@pytest.mark.parametrize("noise_db", [-65.0, -40.0])
async def test_silence_and_steady_noise_never_ask_the_model(
    hearing_transcriber: WhisperTranscriber, turn_model: SmartTurnModel, noise_db: float
) -> None:
    """Quiet room (-65 dBFS) and loud steady noise (-40 dBFS white): once the VAD has heard the room
    (its noise floor starts at -70 dBFS), nothing opens an utterance, so the model is never asked."""
    settings = HearingSettings(turn_detector="smart_turn")
    mic = SimulatedMicrophone(speed=1.0, noise_db=noise_db)
    rec = Events()
    model = CountingModel(turn_model)
    listener = Listener(settings, mic, Counting(hearing_transcriber), rec, turn_model=model)
    await listener.open()
    await asyncio.sleep(4.0)  # the room's noise floor is learnt (and an onset utterance closed)
    await rec.settle(mic)
    calls, started = model.calls, len(rec.of(SpeechStarted))
    mic.feed(hearing_silence(3.0))  # three more seconds of the room
    await asyncio.sleep(3.5)
    await listener.aclose()
    assert model.calls == calls and len(rec.of(SpeechStarted)) == started
    if noise_db < -60:
        assert calls == 0 and not listener.turn_asks


def with_pauses(audio: FloatArray, at_s: list[float], pause_s: float) -> FloatArray:
    """``audio`` with ``pause_s`` of silence put in at each of ``at_s`` (points between words)."""
    cuts = [0, *(round(t * 16000) for t in at_s), len(audio)]
    pieces: list[FloatArray] = []
    for a, b in itertools.pairwise(cuts):
        pieces += [audio[a:b], hearing_silence(pause_s)]
    return np.concatenate(pieces[:-1])


async def test_stale_speculative_decodes_are_cancelled_and_the_whole_sentence_comes(
    hearing_transcriber: WhisperTranscriber, turn_model: SmartTurnModel, jfk: FloatArray
) -> None:
    """Two short pauses (0.25 s) inside the sentence, after "ask not" and after "for you": each asks
    the model (at its first silent frame, ``turn_ask_ms``) and starts a speculative decode that the
    words after it make stale 220 ms later, whether the model answered "wait" by then or not. The
    Listener sets their tokens, so they stop at their next stage (or never start) and give nothing;
    the decode of the turn's end is not cancelled, and the transcripts hold the whole sentence.

    Whether a verdict comes before the words resume is a race with the machine's speed (a fast
    decode and a model sure of "Ask not." end the turn at the pause: the person stopped long enough
    for the device to decide): so the mechanism is asserted, not the timing -- every pause
    closes the utterance exactly when its ask said complete in time, and only then."""
    stt, model = Counting(hearing_transcriber), CountingModel(turn_model)
    sentence = with_pauses(jfk, [1.8, 4.98], 0.25)
    listener, rec = await listen(sentence, stt, model, fallback_ms=HearingSettings().turn_fallback_ms)
    asks = list(listener.turn_asks)
    assert not rec.of(UtteranceFailed), rec.events
    done, ended = rec.of(Transcribed), rec.of(SpeechEnded)
    # The sentence is cut only where the model called the turn complete in time.
    complete = [a for a in asks if a.complete]
    assert len(rec.of(SpeechStarted)) == len(ended) == len(done), rec.events
    cut = [e for e in ended[:-1] if isinstance(e, SpeechEnded)]
    assert all(e.end == "turn_complete" for e in cut) and len(complete) >= len(cut), (asks, rec.events)
    text = " ".join(d.text.lower() for d in done if isinstance(d, Transcribed))
    assert "ask not" in text and "what your country" in text and "for your country" in text, text
    stale = [a for a in asks if a.stale]
    assert len(asks) >= 3, asks  # each pause inside the sentence asked, and the end
    # Every speculative decode but the turns' ends was told to stop, and at least one of the
    # stale ones really stopped early (cancelled at a stage, or never started).
    told = [t.is_set() for t in stt.tokens]
    assert told.count(False) <= len(ended) and told.count(True) >= len(told) - len(ended)
    never_started = len(asks) - len(stt.tokens)
    if stale:
        assert stt.cancelled or never_started > 0, (asks, stt.calls)


async def test_a_turn_ended_by_the_fallback_takes_its_speculative_decode_uncancelled(
    hearing_transcriber: WhisperTranscriber, turn_model: SmartTurnModel, jfk: FloatArray
) -> None:
    """Threshold 1.0 and no late check: the model never calls the turn complete, so the fallback
    silence ends it. No speech came since the question at the last pause, so the decode started
    there (the Whisper thread idle: it runs beside the model) is the transcript -- not cancelled
    when the utterance closes, and no second decode of the same audio."""
    stt, model = Counting(hearing_transcriber), CountingModel(turn_model)
    listener, rec = await listen(
        jfk, stt, model, fallback_ms=HearingSettings().turn_fallback_ms, threshold=1.0, late_ms=0
    )
    (ended,) = rec.of(SpeechEnded)
    (done,) = rec.of(Transcribed)
    assert isinstance(ended, SpeechEnded) and isinstance(done, Transcribed) and ended.end == "silence"
    assert "what your country" in done.text.lower() and "for your country" in done.text.lower()
    asks = list(listener.turn_asks)
    assert asks and not any(a.complete for a in asks), asks
    assert stt.tokens and not stt.tokens[-1].is_set() and not stt.cancelled
    assert len(stt.calls) == len(stt.tokens), stt.calls  # every decode was a speculative one


async def test_the_late_check_ends_a_turn_the_model_calls_unfinished_when_the_words_are_done(
    hearing_transcriber: WhisperTranscriber, turn_model: SmartTurnModel, jfk: FloatArray
) -> None:
    """Threshold 1.0: the model never calls the turn complete. With the late check on, the
    speculative decode still runs; when it ends like a sentence the decoder is sure of (what
    ``late_complete`` says of the last question's text and end probability) the turn ends
    ``turn_complete`` once the pause has lasted ``turn_late_ms`` -- well before the fallback -- and
    that decode is the transcript; otherwise the fallback ends it."""
    late_ms = HearingSettings().turn_late_ms
    stt, model = Counting(hearing_transcriber), CountingModel(turn_model)
    listener, rec = await listen(jfk, stt, model, fallback_ms=FALLBACK_MS, threshold=1.0)
    (ended,) = rec.of(SpeechEnded)
    (done,) = rec.of(Transcribed)
    assert isinstance(ended, SpeechEnded) and isinstance(done, Transcribed)
    assert len(rec.of(SpeechStarted)) == 1
    last = list(listener.turn_asks)[-1]
    assert not last.complete and not last.stale  # the model alone kept it open
    decided_ms = 1000 * (rec.at[rec.events.index(ended)] - ended.ts)
    if late_complete(last.text, last.end_prob, HearingSettings().turn_late_end):
        assert last.late and ended.end == "turn_complete"
        assert late_ms - 60 <= decided_ms < FALLBACK_MS, decided_ms  # not before the late silence
        assert len(stt.calls) == len(stt.tokens)  # the speculative decode is the transcript
    else:  # the words were not done either: the fallback
        assert not last.late and ended.end == "silence", last
    assert "what your country" in done.text.lower()


async def test_the_verdict_weighs_a_longer_sentences_end_as_configured(
    hearing_transcriber: WhisperTranscriber, turn_model: SmartTurnModel, jfk: FloatArray
) -> None:
    """``hearing.turn_long_end`` and ``turn_long_sure`` reach the verdict: with the first at 1.0 (no
    end probability is enough), the second at 1.0 (the model never sure enough) and the model's
    threshold at 0, every question's verdict is ``turn_complete`` with those settings, and a longer
    transcript stays open however sure its end."""
    stt, model = Counting(hearing_transcriber), CountingModel(turn_model)
    listener, _ = await listen(jfk, stt, model, threshold=0.0, late_ms=0, long_end=1.0, long_sure=1.0)
    asks = [a for a in listener.turn_asks if not a.stale and a.text is not None and a.end_prob is not None]
    assert asks
    for a in asks:
        expected = turn_complete(
            a.probability, a.text, 0.0, "words+end", end_prob=a.end_prob, long_end_min=1.0, long_sure=1.0
        )
        assert a.complete == expected, a
        if word_count(a.text) > 3 and a.probability < 1.0 and text_hint(a.text or "") != "unfinished":
            assert not a.complete, a  # at the defaults an end probability of 0.6 would do
    # At least one verdict the settings decided (JFK's "...for your country." p 0.92, end 0.93).
    assert any(
        a.complete != turn_complete(a.probability, a.text, 0.0, "words+end", end_prob=a.end_prob)
        for a in asks
    ), asks


def _piper_words(text: str) -> FloatArray:
    """``text`` in Piper's joe voice (no sampling noise: the same audio every run), its leading and
    trailing silence cut off."""
    builder = load_script("build_speech_sets")
    audio = np.asarray(builder.synth_piper(text, 1.0, noise=False), np.float32)
    idx = np.flatnonzero(np.abs(audio) > 0.01 * float(np.max(np.abs(audio))))
    return audio[int(idx[0]) : int(idx[-1]) + 1]


@pytest.mark.parametrize(
    ("first", "rest"), [("No.", "The fitness one."), ("Sure thing.", "Let's do the animal quiz.")]
)
async def test_first_words_before_a_comma_pause_wait_for_the_short_hold(
    hearing_transcriber: WhisperTranscriber, turn_model: SmartTurnModel, first: str, rest: str
) -> None:
    """ "No, the fitness one." with a long comma between "No" and "the": the question at the comma
    sees "No." -- a finished short answer to the model and the decoder -- and its "complete" waits
    for ``turn_short_hold_ms``, which the comma does not last: one utterance, one transcript. With
    the short hold at the plain hold (240) the same verdict ends the turn at "No.". (Piper's own
    comma there is 240-360 ms to the VAD, and the runtime's short hold 390 ms; the test's comma is
    longer (2.0 s) and its short hold 2500 ms (under the test's 6 s fallback) so that the verdict
    comes inside the comma on a slow, loaded CPU too: it waits for the speculative decode, 170-270 ms
    after the question on a fast x86, over 500 ms on an AVX2-only EPYC, and beside another test
    worker's Whisper there once over 1.2 s.)"""
    lead, gap = hearing_silence(0.3), hearing_silence(2.0)
    audio = np.concatenate([lead, _piper_words(first), gap, _piper_words(rest)])
    stt, model = Counting(hearing_transcriber), CountingModel(turn_model)
    listener, rec = await listen(audio, stt, model, short_hold_ms=2500)
    comma = [a for a in listener.turn_asks if a.text is not None and short_text(a.text)]
    assert comma and comma[0].complete, list(listener.turn_asks)  # the comma's verdict: "complete"
    assert len(rec.of(SpeechStarted)) == 1 and len(rec.of(Transcribed)) == 1, rec.events
    (done,) = rec.of(Transcribed)
    assert isinstance(done, Transcribed) and rest.split()[-2].lower() in done.text.lower()
    stt, model = Counting(hearing_transcriber), CountingModel(turn_model)
    plain_listener, plain = await listen(audio, stt, model, short_hold_ms=0)
    asked = [a for a in plain_listener.turn_asks if a.text is not None and short_text(a.text)]
    assert asked and asked[0].complete and not asked[0].stale, list(plain_listener.turn_asks)
    assert len(plain.of(Transcribed)) == 2, plain.events  # ended at the comma


@pytest.mark.parametrize("words", ["Wait.", "Apple, river, chair."])
async def test_a_short_answer_ends_at_the_short_hold_whatever_its_punctuation(
    hearing_transcriber: WhisperTranscriber, turn_model: SmartTurnModel, words: str
) -> None:
    """ "Wait." said alone ends ``turn_complete`` once the pause has lasted ``turn_short_hold_ms``, not
    at the fallback (Whisper often writes "Wait...", end 0.24-0.30; "Apple River Chair" without a
    mark, end 0.00: the model's sure answer ends them) and not before the short hold."""
    short_ms = HearingSettings().turn_short_floor_ms
    stt, model = Counting(hearing_transcriber), CountingModel(turn_model)
    _, rec = await listen(np.concatenate([hearing_silence(0.3), _piper_words(words)]), stt, model)
    (ended,) = rec.of(SpeechEnded)
    assert isinstance(ended, SpeechEnded) and ended.end == "turn_complete", rec.events
    decided_ms = 1000 * (rec.at[rec.events.index(ended)] - ended.ts)
    assert short_ms - 60 <= decided_ms < FALLBACK_MS, decided_ms
