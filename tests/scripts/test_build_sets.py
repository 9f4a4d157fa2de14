"""The test-set builders (``scripts/``): degradations do what their names say, a small set builds
with a manifest that matches its files, and the real-speech transcript rules hold."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from audio.edges.wav import read_wav
from tests.scripts.loader import load_script

bss = load_script("build_speech_sets")
real = load_script("build_real_speech_sets")
RATE = 16000
LEAD = int(0.4 * RATE)


def _voice_like(seconds: float = 1.0) -> np.ndarray:
    """A steady harmonic tone: 'speech' whose level and spectrum are known."""
    t = np.arange(int(seconds * RATE)) / RATE
    return (np.sin(2 * np.pi * 200 * t) + 0.5 * np.sin(2 * np.pi * 2600 * t)).astype(np.float32)


def _db(x: np.ndarray) -> float:
    return float(20 * np.log10(np.sqrt(np.mean(np.square(x, dtype=np.float64))) + 1e-12))


def _band_share(x: np.ndarray, above_hz: float) -> float:
    power = np.abs(np.fft.rfft(x)) ** 2
    return float(power[np.fft.rfftfreq(len(x), 1 / RATE) > above_hz].sum() / power.sum())


@pytest.mark.parametrize("snr", [20, 10, 5, 0])
def test_noise_conditions_have_the_snr_they_name(snr: int) -> None:
    speech = _voice_like()
    for seed in range(3):
        out = bss.degrade(speech, f"snr{snr}", np.random.default_rng(seed))
        assert len(out) == LEAD + len(speech) + int(0.6 * RATE)
        level_db = np.random.default_rng(seed).uniform(-9, -3)  # degrade's first draw: the speech peak
        placed = speech / np.abs(speech).max() * 10 ** (level_db / 20)
        noise = out.astype(np.float64)
        noise[LEAD : LEAD + len(speech)] -= placed
        assert abs(_db(placed) - _db(noise) - snr) < 0.3


def test_quiet_mumbled_phone_and_tight_degrade_as_named() -> None:
    speech = _voice_like()
    rng = np.random.default_rng(1)
    clean = bss.degrade(speech, "clean", rng)
    quiet = bss.degrade(speech, "quiet", rng)
    mumbled = bss.degrade(speech, "mumbled", rng)
    phone = bss.degrade(speech, "phone", rng)
    tight = bss.degrade(speech, "tight", rng)
    region = slice(LEAD, LEAD + len(speech))
    assert -12 <= 20 * np.log10(np.abs(clean).max()) <= -2  # clean: normalised to -9..-3 dB peak
    assert 20 * np.log10(np.abs(quiet[region]).max()) < -24  # 22-30 dB below that
    assert _band_share(clean[region], 1000) > 0.1
    assert _band_share(mumbled[region], 1000) < 1e-3  # low-passed at 500-900 Hz
    assert _band_share(phone[region], 4100) < 1e-4  # 8 kHz band
    assert len(tight) < len(speech) + int(0.1 * RATE)  # trimmed: no lead or trail to speak of
    assert _band_share(tight, 4100) < 1e-3


@pytest.mark.parametrize("kind", ["near_silence", "room_noise", "hum", "clicks", "chime"])
def test_nonspeech_clips_are_one_to_four_seconds_at_their_level(kind: str) -> None:
    levels = {"near_silence": (-80, -50), "room_noise": (-50, -23), "hum": (-45, -20)}
    for seed in range(4):
        x = bss.nonspeech(kind, np.random.default_rng(seed))
        assert 1.0 * RATE <= len(x) <= 4.0 * RATE and x.dtype == np.float32
        if kind in levels:
            low, high = levels[kind]
            assert low <= _db(x) <= high, (kind, _db(x))
        if kind == "chime":
            assert -13 <= 20 * np.log10(np.abs(x).max()) <= -3


@pytest.mark.parametrize(("rt60", "drr_db"), [(0.3, 9.0), (0.5, 3.0), (0.8, -3.0)])
def test_room_response_decays_in_its_rt60_at_its_direct_to_reverberant_ratio(
    rt60: float, drr_db: float
) -> None:
    h = bss.room_response(np.random.default_rng(3), rt60, drr_db).astype(np.float64)
    assert h[0] == 1.0 and len(h) == int(rt60 * RATE)
    assert abs(10 * np.log10(1.0 / np.sum(h[1:] ** 2)) - drr_db) < 0.1
    # Schroeder backward integral of the tail: -5 to -25 dB over the time a 60 dB decay takes / 3.
    energy = np.cumsum((h[1:] ** 2)[::-1])[::-1]
    decay_db = 10 * np.log10(energy / energy[0])
    t5, t25 = np.argmax(decay_db < -5) / RATE, np.argmax(decay_db < -25) / RATE
    assert abs((t25 - t5) * 3 - rt60) < 0.15 * rt60


def test_room_condition_smears_speech_into_the_pause_after_it() -> None:
    """Right after the speech ends its reverberation is still well above the room's noise floor,
    which is what is left half a second later."""
    speech = _voice_like()
    spoken = slice(LEAD, LEAD + len(speech))
    just_after = slice(LEAD + len(speech) + int(0.02 * RATE), LEAD + len(speech) + int(0.1 * RATE))
    for seed in range(5):
        room = bss.degrade(speech, "room", np.random.default_rng(seed))
        assert len(room) == LEAD + len(speech) + int(0.6 * RATE)
        floor_db = _db(room[-int(0.05 * RATE) :]) - _db(room[spoken])
        assert -36 < floor_db < -19  # fan noise 20-35 dB below the speech
        assert _db(room[just_after]) - _db(room[spoken]) > floor_db + 6


def test_a_set_of_one_condition_has_every_line_in_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bss, "SENTENCES", ("Can you tell me a story?",))
    monkeypatch.setattr(bss, "GOODBYES", ("Bye.",))
    monkeypatch.setattr(bss, "WORDS", ("Seven.",))
    monkeypatch.setitem(bss.VOICES, "test", ("espeak:en-us+f3",))
    assert bss.build(tmp_path, "test", seed=5, per_kind=0, only=("room",)) == 3
    with (tmp_path / "manifest.tsv").open() as fh:
        assert {r["condition"] for r in csv.DictReader(fh, delimiter="\t")} == {"room"}


def test_a_small_set_builds_with_a_manifest_that_matches_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bss, "SENTENCES", ("Can you tell me a story?",))
    monkeypatch.setattr(bss, "GOODBYES", ("Bye.",))
    monkeypatch.setattr(bss, "WORDS", ("Seven.",))
    monkeypatch.setitem(bss.VOICES, "test", ("piper:joe:1.15", "espeak:en-us+f3"))
    count = bss.build(tmp_path, "test", seed=5, per_kind=1)
    with (tmp_path / "manifest.tsv").open() as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    assert len(rows) == count == 2 * (3 + 3 + len(bss.CONDITIONS)) + 5
    for row in rows:
        audio, rate = read_wav(tmp_path / row["relpath"])
        assert rate == RATE and len(audio) > RATE // 2
        assert (row["kind"] == "speech") == bool(row["transcript"])
    goodbyes = {(r["voice"], r["condition"]) for r in rows if r["transcript"] == "Bye."}
    assert len(goodbyes) == 2 * len(bss.CONDITIONS)  # goodbyes get every condition
    for text in ("Seven.", "Can you tell me a story?"):  # others: clean plus two conditions
        for voice in bss.VOICES["test"]:
            conds = [r["condition"] for r in rows if r["transcript"] == text and r["voice"] == voice]
            assert len(set(conds)) == 3 and "clean" in conds


@pytest.mark.parametrize(
    ("prompt", "text", "expected"),
    [
        ("digits/42", "42", ("speech", "forty two")),
        ("vm-press", "Press * to cancel, # to confirm", ("speech", "Press star to cancel, pound to confirm")),
        ("letters/at", "at [@]", ("speech", "at")),
        ("digits/h-40", "fourtieth", ("speech", "fortieth")),
        ("silence/1", "", ("nonspeech", "")),
        ("beep", "[beep]", ("nonspeech", "")),
    ],
)
def test_asterisk_prompts_become_what_is_said(prompt: str, text: str, expected: tuple[str, str]) -> None:
    assert real.asterisk_transcript(prompt, text) == expected


def test_an_asterisk_prompt_with_a_number_it_cannot_spell_is_an_error() -> None:
    with pytest.raises(real.BuildError, match="no rule for the number 500"):
        real.asterisk_transcript("demo-x", "dial 500 now")
