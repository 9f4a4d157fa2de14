"""Settings for hearing: microphone capture, voice activity endpointing and speech-to-text."""

from __future__ import annotations

from dataclasses import dataclass

from audio.settings_checks import Check, listed, raise_first_failed
from audio.unsigned_int8 import INT8_WEIGHTS

STT_PROVIDERS: tuple[str, ...] = ("whisper", "openai")
"""Valid values of ``stt_provider`` (the engines ``audio.hearing.stt.make_transcriber`` builds)."""

VAD_FRAME_MS: tuple[int, ...] = (10, 20, 30)
"""Frame lengths webrtcvad accepts, in milliseconds: the valid values of ``block_ms``."""

VAD_AGGRESSIVENESS: tuple[int, ...] = (0, 1, 2, 3)
"""webrtcvad's modes: the valid values of ``vad_aggressiveness``."""

TURN_DETECTORS: tuple[str, ...] = ("smart_turn", "silence")
"""Valid values of ``turn_detector``."""

TURN_TEXT_CHECKS: tuple[str, ...] = ("off", "words", "words+punctuation", "words+end")
"""Valid values of ``turn_text_check`` (``audio.hearing.turn.turn_complete``)."""

ECHO_CANCELLATION: tuple[str, ...] = ("off", "webrtc", "dtln", "system")
"""Valid values of ``echo_cancellation`` (full duplex, ``audio.hearing.front_end``)."""

ECHO_MODEL_UNITS: tuple[int, ...] = (512, 256)
"""DTLN-aec's sizes by the LSTM units of each stage: the valid values of ``echo_model_units`` (the
fetcher installs both, ``audio.hearing.dtln_aec.MODEL_FILES``)."""

GUARD_BY_CANCELLER: dict[str, tuple[int, float]] = {"webrtc": (120, 6.0), "dtln": (90, 18.0)}
"""Per in-process canceller, the guard against its residue while the device speaks: the speech a
barge-in needs (ms) and the residual-echo gate's margin over the expected residue (dB), which
``barge_in_speech_ms`` and ``echo_guard_margin_db`` at 0 stand for (measured by ``robot-face bench
duplex``, docs/hearing.md "DTLN-aec in the device": DTLN-aec's residue varies more from block to
block than WebRTC's, so it needs a wider margin, and with it no stricter start)."""


@dataclass(frozen=True)
class HearingSettings:
    """Everything the hearing part can be tuned with (one TOML table, ``[hearing]``)."""

    input_device: str | None = None
    """Input device name or case-insensitive substring; None means the system default (default None)."""

    sample_rate: int = 16000
    """Rate the pipeline works at, in Hz; hardware at 44.1/48 kHz is resampled to it (default 16000)."""

    device_sample_rate: int = 0
    """Rate to open the hardware at, in Hz; 0 tries ``sample_rate``, the device's default, then 48 and
    44.1 kHz (default 0)."""

    block_ms: int = 30
    """Capture block and VAD frame length, in milliseconds: 10, 20 or 30 (default 30)."""

    reopen_interval_s: float = 2.0
    """Seconds between attempts to reopen a missing or unplugged microphone (default 2.0)."""

    vad_aggressiveness: int = 1
    """webrtcvad aggressiveness 0 (lenient) .. 3 (strict) (default 1)."""

    energy_gate_db: float = -55.0
    """Frames quieter than this level (dBFS RMS) never count as speech (default -55.0)."""

    noise_margin_db: float = 9.0
    """Frames must also be this many dB above the tracked noise floor to count as speech (default 9.0)."""

    tone_gate_share: float = 0.985
    """An utterance whose frames hold more than this share (0..1) of their energy within ±31 Hz of one
    frequency is a beep or a tone, not speech: it gets no transcript. 1.0 turns the check off
    (default 0.985; real speech measured ≤ 0.97)."""

    start_window_ms: int = 240
    """Window in which speech must dominate to start an utterance, in milliseconds (default 240)."""

    start_speech_ms: int = 90
    """Speech needed inside ``start_window_ms`` to start an utterance, in milliseconds (default 90)."""

    end_silence_ms: int = 700
    """Silence that ends an utterance, in milliseconds (default 700)."""

    pre_roll_ms: int = 300
    """Audio kept from before the detected start so the first syllable is never cut, in ms (default 300)."""

    post_roll_ms: int = 200
    """Trailing silence kept at the end of an utterance sent to STT, in milliseconds (default 200)."""

    min_utterance_ms: int = 100
    """Utterances whose speech (first to last speech frame) is shorter fail ``too_short``, ms (default 100)."""

    max_part_ms: int = 20000
    """Longest audio transcribed at once, in milliseconds (at most 28000: Whisper decodes at most
    30 s). Speech going on longer is cut in the longest pause of the last 8 s and transcribed part
    by part while the user talks; the parts make one transcript (default 20000: beyond ~22 s
    tiny.en sometimes stops mid-sentence)."""

    max_utterance_ms: int = 120000
    """An utterance ends after this long even without a pause, in milliseconds; what was heard is
    transcribed and, if the user goes on, a new utterance starts at once (default 120000)."""

    half_duplex: bool = True
    """Discard microphone audio while the device speaks (default True)."""

    speaking_tail_ms: int = 300
    """Audio always discarded after the device stops speaking (its echo in the room), in ms
    (default 300)."""

    speaking_tail_max_ms: int = 1000
    """Audio discarded after the device stops speaking while its echo is still measured above the
    room's noise floor and decaying, at most this long in ms; a level that rises or stops falling
    (someone speaking) ends it at once (default 1000; at most ``speaking_tail_ms`` = a fixed tail)."""

    echo_margin_db: float = 6.0
    """The echo is over once the microphone level is within this many dB of the room's noise
    floor measured while the device was silent (default 6.0)."""

    stt_provider: str = "whisper"
    """Speech-to-text engine: "whisper" (local faster-whisper) or "openai" (compatible endpoint) (default "whisper")."""

    stt_openai_base_url: str = ""
    """Base URL of the OpenAI-compatible endpoint, e.g. http://host:8000/v1; empty = OpenAI (default "")."""

    stt_openai_model: str = "whisper-1"
    """Transcription model name at the OpenAI-compatible endpoint (default "whisper-1")."""

    stt_openai_api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the endpoint's API key (default "OPENAI_API_KEY")."""

    stt_timeout_s: float = 15.0
    """Timeout of one remote transcription request, in seconds (default 15.0)."""

    stt_model: str = ""
    """Whisper model directory or faster-whisper model name; empty means packaged tiny.en (default "")."""

    stt_cross_check_model: str = ""
    """Second recogniser whose transcript Whisper's is checked against for the confidence
    (``audio.hearing.cross_check``): a Moonshine ONNX directory; empty means the one ``python -m
    audio.fetch_models`` installed; "off" turns the check off (a calibration fitted without it is
    used; 0.02-0.06 lower AUROC, saves ~40-250 ms of one core per utterance; default "")."""

    stt_compute_type: str = "int8"
    """CTranslate2 compute type, e.g. int8, int8_float32, float32 (default "int8")."""

    stt_threads: int = 1
    """CPU threads for Whisper (default 1). The short-window decode is many small steps: on a 2-core
    machine one thread was faster than two (same transcripts; ``robot-face bench stt --threads``),
    and it leaves the other core to the cross-check recogniser running beside it."""

    stt_beam_size: int = 5
    """Width of the second-opinion beam search run after the greedy pass for short or shaky
    utterances, also the number of hypotheses the confidence compares; 1 turns it off (fastest, but
    less accurate and the confidence has no rivals; default 5, what the calibration is fitted for)."""

    stt_language: str = "en"
    """Language code passed to Whisper (default "en"; English-only models ignore others)."""

    stt_short_window: bool = True
    """Encode only the real audio plus a margin instead of Whisper's full 30 s window (default True)."""

    stt_window_margin_ms: int = 2000
    """Padding appended after the audio when encoding a short window, in ms (default 2000)."""

    stt_min_window_ms: int = 5000
    """Shortest encoder window used by the short-window path, in milliseconds (default 5000)."""

    # ---- turn-taking (audio.hearing.turn, audio.hearing.turn_model; docs/hearing.md) ------------
    turn_detector: str = "smart_turn"
    """How the end of the user's turn is found: "smart_turn" (a short pause asks the Smart Turn
    end-of-turn model, which ends the turn at once or waits for more) or "silence" (a fixed
    ``end_silence_ms`` of silence, for boards too weak for the model) (default "smart_turn")."""

    turn_pause_ms: int = 120
    """smart_turn: silence after speech that asks the model, in milliseconds (default 120)."""

    turn_hold_ms: int = 240
    """smart_turn: the least silence after speech before a "complete" verdict ends the turn, in
    milliseconds, at least ``turn_pause_ms`` in any case (0: ``turn_pause_ms``). The model and the decode still judge the pause as it is at
    ``turn_pause_ms``; the hold only keeps their "complete" from ending the turn inside a shorter
    pause -- a spoken comma ("Apple, river, chair.": 150 ms between Piper's words; 150-210 ms at
    most commas of the real read sentences). Without it the floor was ``turn_pause_ms`` and
    whether a comma ended the turn depended on the CPU: a slow one answered after the comma had
    passed, a fast one inside it (default 240; docs/hearing.md)."""

    turn_short_hold_ms: int = 390
    """smart_turn: the hold for a short transcript (one to three words, ``turn.short_text``), in
    milliseconds (0: ``turn_hold_ms``; never less than it). The first words before a comma ("No, the
    fitness one.", "Sure thing, let's do the animal quiz.", "Maybe later, after my lunch.") read as
    a finished short answer to the model and the decoder alike (p 0.85-0.99, end 0.5-0.8: the same
    as said alone), and Piper's pause there is 240-420 ms to the VAD: longer than the hold, so the
    turn ended at "Sure thing." (25 of 80 such sentences). A short answer ends this much after the
    last word instead, and then also when the model says at least ``turn.ONE_WORD_SURE`` (one word)
    or ``turn.SHORT_SURE`` whatever the decoder's end probability ("Wait..." end 0.24-0.30, "Apple
    River Chair" end 0.00 waited for the fallback) (default 390; docs/hearing.md)."""

    turn_ask_ms: int = 30
    """smart_turn: silence after speech at which the model is asked (and the speculative decode
    starts), in milliseconds, at most ``turn_pause_ms``; 0 = at ``turn_pause_ms``. Asked sooner,
    both hear the pause so far continued by copies of its own quiet to ``turn_pause_ms``, and a
    "complete" verdict ends the turn once the pause has lasted ``turn_pause_ms`` (speech before then
    drops the question): the same judgement, its CPU spent sooner -- and more of it, a question at
    every short gap in the words, and a verdict that lands inside more of the pauses between two
    sentences (measured in three runs against 0: median 391 / 311 / 380 against 428 / 446 / 437
    ms, hesitations kept whole 79 / 90 / 86 % against 79 / 74 / 76 %; docs/hearing.md) (default
    30: the first silent frame)."""

    turn_decode_ms: int = 0
    """smart_turn: silence after speech at which the speculative decode of the words so far starts,
    in milliseconds, at most ``turn_pause_ms``; 0 = with the model's question (``turn_ask_ms``: a
    decode set later than the question starts with it). Earlier (30) answers
    a finished turn sooner (median -26 ms, p90 -99 ms measured) but has kept fewer hesitations whole
    (81 % against 86 %; docs/hearing.md); speech that resumes stops it (default 0)."""

    turn_threshold: float = 0.3
    """smart_turn: the model's probability (0..1) at or above which the turn may be complete; with
    "words+end" the decoder must also expect the sentence to end there, and without that signal
    at least 0.5 is needed (default 0.3)."""

    turn_fallback_ms: int = 1500
    """smart_turn: silence that ends the turn even when the model judged it unfinished, in
    milliseconds (default 1500)."""

    turn_text_check: str = "words+end"
    """smart_turn: what the speculative transcript adds to the model's verdict: "off" (the model
    alone), "words" (a last word that cannot end a sentence -- an article, preposition or conjunction
    -- keeps the turn open), "words+punctuation" (also: without a full stop, question or exclamation
    mark the model must be surer), "words+end" (the words rule, and the decoder's probability of a
    sentence mark after the last word must be at least 0.4, ``audio.hearing.turn``) (default
    "words+end")."""

    turn_late_ms: int = 390
    """smart_turn with "words+end": silence after which a transcript of three words or more that
    ends like a sentence (a full stop, question or exclamation mark, not on a word no sentence ends on) with the decoder's
    probability of that mark at least ``turn_late_end`` ends the turn whatever the model said (the
    model calls some whole read sentences unfinished to the end: they waited for the fallback), in
    milliseconds; 0 = off (default 390)."""

    turn_late_end: float = 0.8
    """smart_turn: the decoder's end probability (0..1) the late check (``turn_late_ms``) needs
    (default 0.8)."""

    turn_long_end: float = 0.6
    """smart_turn with "words+end": the decoder's end probability (0..1) a transcript of more than
    three words needs to end the turn at the pause, unless the model is sure of it (0.9,
    ``turn.LONG_SURE``); 0 = the same as a short one's (0.4, ``turn.END_MIN``). Whisper is often
    unsure whether a first half that reads as a sentence ends there ("Please hold while I try to
    locate the person." 0.57-0.60): 0.6 keeps such hesitations whole (docs/hearing.md "The long
    sentence's end"; default 0.6)."""

    turn_long_sure: float = 0.9
    """smart_turn with "words+end": the model's probability (0..1) with which a transcript of more
    than three words that ends in a sentence mark ends the turn at the short one's end probability
    instead of ``turn_long_end`` (whole sentences whose end the decoder is unsure of get 0.92-0.98;
    default 0.9)."""

    turn_model: str = ""
    """smart_turn: path of the Smart Turn v3 ONNX file; empty means the one ``python -m
    audio.fetch_models`` installed (default "")."""

    turn_int8_weights: str = "auto"
    """smart_turn: how the model's int8 weights are loaded: "unsigned" (the same values stored as
    uint8, prepared once on disk: exact on every CPU), "signed" (the file as shipped: on x86 CPUs
    without VNNI, AVX2 ones included, onnxruntime's kernels for it saturate and the probability
    drifts, by 0.13 on average over real clips on an AVX2-only EPYC), or "auto" (unsigned on x86-64
    CPUs without VNNI, as shipped elsewhere: on ARM and with VNNI those kernels are exact, and faster)
    (``audio.unsigned_int8``; default "auto")."""

    # ---- full duplex (audio.hearing.front_end; docs/hearing.md "Full duplex") ----------------------
    echo_cancellation: str = "off"
    """Echo cancellation: "off" = half duplex (what the microphone hears while the device speaks,
    plus its echo tail, is discarded; the safe fallback), "webrtc" = WebRTC's canceller in process
    (the PyPI package livekit) on the capture path before VAD, "dtln" = DTLN-aec, a neural canceller
    trained for double talk (``audio.hearing.dtln_aec``; TFLite through ai-edge-litert, the model
    from ``python -m audio.fetch_models``): barge-ins heard sooner and their first words kept
    (docs/hearing.md "A neural canceller: DTLN-aec"), "system" = the operating system
    cancels (PulseAudio/PipeWire module-echo-cancel; the input and output devices are its echo-cancel
    source and sink, docs/deploy.md; the device stays half duplex: no reference for the
    residual-echo guard) (default "off": full duplex is measured in the simulated room only so far,
    docs/deploy.md; ``robot-face demo`` runs the simulation with "webrtc")."""

    echo_model: str = ""
    """With "dtln": the directory holding DTLN-aec's two TFLite stages of the size
    ``echo_model_units`` names (``dtln_aec_<units>_quant_dynamic_{1,2}.tflite``); empty means the
    one ``python -m audio.fetch_models`` installed (both sizes) (default "")."""

    echo_model_units: int = 512
    """With "dtln": which size of DTLN-aec runs, by the LSTM units of its stages: 512 cancels best
    and costs 2-18 % of an x86 core per 10 ms frame depending on the CPU (int8 dot products), 256
    cancels a little less at a quarter to a third of that (docs/hearing.md "DTLN-aec's two sizes";
    ``robot-face doctor`` prints what a frame costs on the board) (default 512)."""

    echo_guard_margin_db: float = 0.0
    """While the device speaks in full duplex: how far above the canceller's expected residue a
    block must stand to be the user's (the residual-echo gate, ``EchoGuard.margin_db``), in dB;
    0 = the canceller's own (``GUARD_BY_CANCELLER``: 6 with "webrtc", 18 with "dtln") (default 0)."""

    noise_suppression: bool = True
    """With "webrtc": WebRTC's noise suppression on the microphone (its moderate level; livekit's
    binding exposes on/off only) (default true)."""

    high_pass_filter: bool = True
    """With "webrtc": WebRTC's high-pass filter (removes hum and rumble below ~80 Hz) (default true)."""

    echo_delay_ms: int = 0
    """With "webrtc": delay of the echo beyond the output and input latencies PortAudio reports (the
    air path and converters), in ms; WebRTC's delay estimator follows the rest (default 0; the
    simulation uses the simulated room's delay)."""

    barge_in_speech_ms: int = 0
    """Speech needed to start an utterance while the device speaks in full duplex (a barge-in), in
    ms (within a start window widened to hold it; never less than ``start_speech_ms``); 0 = the
    canceller's own (``GUARD_BY_CANCELLER``): 120 with "webrtc", stricter than the normal start, a
    second guard behind the residual-echo gate against the residue of its own voice (measured by
    ``robot-face bench duplex``, with the gate's tail rule; 250 reported only about a fifth of the
    barge-ins within 300 ms and missed short ones such as "Actually, stop."); 90 with "dtln", whose
    wider gate margin does that (default 0)."""

    early_duck_speech_ms: int = 0
    """Speech over a reply that ducks it at once, before ``barge_in_speech_ms`` confirms a barge-in,
    in ms (within the same start window; full duplex only); released after
    ``early_duck_release_ms`` when no barge-in follows (the face does not change, nothing is
    published). 0 = off: the reply ducks once the barge-in is confirmed (default 0: measured by
    ``robot-face bench duplex --early-ms``, docs/hearing.md "The early duck": 60 ms ducks the reply
    ~60 ms sooner and 30 ms ~90 ms sooner, but the short barge-ins' words came back no better --
    what WebRTC's suppressor takes is the first ~80 ms of the first word -- for 14 / 31 dips of the
    reply per 100 replies with nobody speaking)."""

    early_duck_release_ms: int = 300
    """How long an early duck lasts, from the first voiced frame, when no barge-in is confirmed
    (the device's own voice passed the shorter start), in ms (default 300)."""

    duck_db: float = -18.0
    """Level of a reply while the user speaks over it, in dB relative to its volume; 0 = no ducking
    (default -18.0: measured by ``robot-face bench duplex --duck-db``, the user's words spoken over
    the echo are heard within 1-4 points of the words alone; at -12 dB WebRTC's suppressor still
    took 4-9 points more of them where the room's echo is as loud as the user)."""

    duck_weak_db: float = -30.0
    """The level instead while the canceller removes less than ``weak_canceller_db`` of the echo (or
    before it was measured), in dB; the deeper of the two applies (default -30.0: measured by
    ``robot-face bench duplex``'s weak-canceller line, the user's words over the reply with the
    canceller limited to 6 / 12 / 20 dB: 85 / 55 / 22 % WER ducked by 18 dB, 41 / 24 / 11 % by 30;
    deeper still helps only the weakest)."""

    weak_canceller_db: float = 30.0
    """A canceller that removes less of the speaker's echo than this is weak (dB; the median frame of
    its last 10 s of echo alone, ``FrontEnd.removal_db``): barge-ins over it duck by ``duck_weak_db``
    (default 30: at 20 dB the deeper duck halves the errors, at 30 it changes nothing measurable;
    WebRTC's removes 40-65 dB in the simulated room, as little as 5-8 dB has been reported on real
    hardware; 0 = never weak once measured)."""

    duck_hold_ms: int = 1000
    """How long the reply stays ducked after a barge-in utterance ends, in ms: people go on after
    a short pause ("Actually, ... stop.": the end-of-turn model may close the utterance at the
    comma), and the agent needs a moment to react; the next barge-in within the hold keeps the
    duck, a reply stopped or the device asleep ends it (default 1000; 0 = back to full volume when
    the utterance ends)."""

    @property
    def barge_in_start_ms(self) -> int:
        """Speech a barge-in needs, in ms: ``barge_in_speech_ms``, or the canceller's own
        (``GUARD_BY_CANCELLER``; WebRTC's when none runs here), never under ``start_speech_ms``."""
        own = GUARD_BY_CANCELLER.get(self.echo_cancellation, GUARD_BY_CANCELLER["webrtc"])[0]
        return max(self.start_speech_ms, self.barge_in_speech_ms or own)

    @property
    def guard_margin_db(self) -> float:
        """The residual-echo gate's margin over the expected residue, in dB:
        ``echo_guard_margin_db``, or the canceller's own (``GUARD_BY_CANCELLER``; WebRTC's when
        none runs here)."""
        own = GUARD_BY_CANCELLER.get(self.echo_cancellation, GUARD_BY_CANCELLER["webrtc"])[1]
        return self.echo_guard_margin_db or own

    @property
    def turn_question_ms(self) -> int:
        """smart_turn: the silence at which the end-of-turn question comes, in ms (``turn_ask_ms``,
        or ``turn_pause_ms`` when that is 0)."""
        return self.turn_ask_ms or self.turn_pause_ms

    @property
    def turn_floor_ms(self) -> int:
        """smart_turn: the least silence after speech that can end a turn, in ms (``turn_hold_ms``,
        at least ``turn_pause_ms``)."""
        return max(self.turn_pause_ms, self.turn_hold_ms)

    @property
    def turn_short_floor_ms(self) -> int:
        """smart_turn: the least silence after a short transcript that can end a turn, in ms
        (``turn_short_hold_ms``, at least ``turn_floor_ms``)."""
        return max(self.turn_floor_ms, self.turn_short_hold_ms)

    def validate(self) -> None:
        """Raise ValueError naming the key ("hearing.block_ms: ...") for a value that cannot work;
        ``device.config`` calls it when it loads the configuration."""
        from audio.hearing.engine import SAMPLE_RATE

        checks: tuple[Check, ...] = (
            (
                "sample_rate",
                self.sample_rate == SAMPLE_RATE,
                f"must be {SAMPLE_RATE}: webrtcvad and the speech-to-text engines take {SAMPLE_RATE} Hz "
                "(device_sample_rate sets the hardware's rate)",
            ),
            ("device_sample_rate", self.device_sample_rate >= 0, "must be >= 0 (0 = automatic)"),
            (
                "block_ms",
                self.block_ms in VAD_FRAME_MS,
                f"must be one of {listed(VAD_FRAME_MS)} (webrtcvad)",
            ),
            ("reopen_interval_s", self.reopen_interval_s > 0, "must be > 0"),
            (
                "vad_aggressiveness",
                self.vad_aggressiveness in VAD_AGGRESSIVENESS,
                f"must be one of {listed(VAD_AGGRESSIVENESS)} (0 lenient .. 3 strict)",
            ),
            ("tone_gate_share", 0.0 < self.tone_gate_share <= 1.0, "must be in (0, 1] (1.0 = off)"),
            ("start_window_ms", self.start_window_ms > 0, "must be > 0"),
            (
                "start_speech_ms",
                0 < self.start_speech_ms <= self.start_window_ms,
                f"must be > 0 and at most start_window_ms ({self.start_window_ms})",
            ),
            ("end_silence_ms", self.end_silence_ms > 0, "must be > 0"),
            ("pre_roll_ms", self.pre_roll_ms >= 0, "must be >= 0"),
            ("post_roll_ms", self.post_roll_ms >= 0, "must be >= 0"),
            ("min_utterance_ms", self.min_utterance_ms >= 0, "must be >= 0"),
            ("max_part_ms", self.max_part_ms > 0, "must be > 0"),
            ("max_utterance_ms", self.max_utterance_ms > 0, "must be > 0"),
            ("speaking_tail_ms", self.speaking_tail_ms >= 0, "must be >= 0"),
            ("speaking_tail_max_ms", self.speaking_tail_max_ms >= 0, "must be >= 0"),
            ("stt_provider", self.stt_provider in STT_PROVIDERS, f"must be one of {listed(STT_PROVIDERS)}"),
            ("stt_timeout_s", self.stt_timeout_s > 0, "must be > 0"),
            ("stt_threads", self.stt_threads >= 1, "must be >= 1"),
            ("stt_beam_size", self.stt_beam_size >= 1, "must be >= 1 (1 = no beam search)"),
            ("stt_window_margin_ms", self.stt_window_margin_ms >= 0, "must be >= 0"),
            ("stt_min_window_ms", self.stt_min_window_ms >= 0, "must be >= 0"),
            (
                "turn_detector",
                self.turn_detector in TURN_DETECTORS,
                f"must be one of {listed(TURN_DETECTORS)}",
            ),
            (
                "turn_int8_weights",
                self.turn_int8_weights in INT8_WEIGHTS,
                f"must be one of {listed(INT8_WEIGHTS)}",
            ),
            ("turn_pause_ms", self.turn_pause_ms > 0, "must be > 0"),
            (
                "turn_hold_ms",
                0 <= self.turn_hold_ms < self.turn_fallback_ms,
                f"must be from 0 to under turn_fallback_ms ({self.turn_fallback_ms})",
            ),
            (
                "turn_short_hold_ms",
                0 <= self.turn_short_hold_ms < self.turn_fallback_ms,
                f"must be from 0 to under turn_fallback_ms ({self.turn_fallback_ms})",
            ),
            (
                "turn_ask_ms",
                0 <= self.turn_ask_ms <= self.turn_pause_ms,
                f"must be 0 (at turn_pause_ms) or at most turn_pause_ms ({self.turn_pause_ms})",
            ),
            (
                "turn_decode_ms",
                0 <= self.turn_decode_ms <= self.turn_pause_ms,
                f"must be 0 (with the question) or at most turn_pause_ms ({self.turn_pause_ms})",
            ),
            ("turn_threshold", 0.0 < self.turn_threshold <= 1.0, "must be in (0, 1]"),
            (
                "turn_fallback_ms",
                self.turn_fallback_ms > self.turn_pause_ms,
                f"must be more than turn_pause_ms ({self.turn_pause_ms})",
            ),
            (
                "turn_text_check",
                self.turn_text_check in TURN_TEXT_CHECKS,
                f"must be one of {listed(TURN_TEXT_CHECKS)}",
            ),
            (
                "turn_late_ms",
                self.turn_late_ms == 0 or self.turn_pause_ms < self.turn_late_ms < self.turn_fallback_ms,
                f"must be 0 (off) or between turn_pause_ms ({self.turn_pause_ms}) and turn_fallback_ms"
                f" ({self.turn_fallback_ms})",
            ),
            ("turn_late_end", 0.0 < self.turn_late_end <= 1.0, "must be in (0, 1]"),
            ("turn_long_end", 0.0 <= self.turn_long_end <= 1.0, "must be in 0..1 (0 = off)"),
            ("turn_long_sure", 0.0 < self.turn_long_sure <= 1.0, "must be in (0, 1]"),
            (
                "echo_cancellation",
                self.echo_cancellation in ECHO_CANCELLATION,
                f"must be one of {listed(ECHO_CANCELLATION)}",
            ),
            ("echo_delay_ms", 0 <= self.echo_delay_ms <= 500, "must be in 0..500"),
            (
                "echo_model_units",
                self.echo_model_units in ECHO_MODEL_UNITS,
                f"must be one of {listed(ECHO_MODEL_UNITS)}",
            ),
            (
                "echo_guard_margin_db",
                0.0 <= self.echo_guard_margin_db <= 30.0,
                "must be in 0..30 (0 = the canceller's)",
            ),
            (
                "barge_in_speech_ms",
                self.barge_in_speech_ms == 0 or 30 <= self.barge_in_speech_ms <= 2000,
                "must be 0 (the canceller's) or in 30..2000",
            ),
            (
                "early_duck_speech_ms",
                self.early_duck_speech_ms == 0 or 30 <= self.early_duck_speech_ms < self.barge_in_start_ms,
                f"must be 0 (off) or in 30..the barge-in start ({self.barge_in_start_ms} ms, "
                "barge_in_speech_ms), exclusive",
            ),
            ("early_duck_release_ms", 50 <= self.early_duck_release_ms <= 2000, "must be in 50..2000"),
            ("duck_db", -60.0 <= self.duck_db <= 0.0, "must be in -60..0 (0 = no ducking)"),
            ("duck_weak_db", -60.0 <= self.duck_weak_db <= 0.0, "must be in -60..0"),
            ("weak_canceller_db", 0.0 <= self.weak_canceller_db <= 60.0, "must be in 0..60 (0 = never weak)"),
            ("duck_hold_ms", 0 <= self.duck_hold_ms <= 10000, "must be in 0..10000 (0 = no hold)"),
        )
        raise_first_failed("hearing", self, checks)
