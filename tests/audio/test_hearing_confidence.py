"""Confidence score: calibration file in sync, clamping, text normalisation for WER."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from audio.hearing.confidence import (
    CALIBRATION_PATH,
    CROSS_FEATURE_NAMES,
    FEATURE_NAMES,
    MIN_CONFIDENCE,
    SINGLE_CALIBRATION_PATH,
    ConfidenceFeatures,
    feature_vector,
    has_repeated_word,
    is_filler,
    load_calibration,
    score,
    text_key,
)
from audio.hearing.wer import normalise_for_wer, word_errors
from audio.tools.eval_confidence import auroc, ece


def features(**over: object) -> ConfidenceFeatures:
    base: dict[str, object] = {
        "avg_logprob": -0.3,
        "min_token_prob": 0.6,
        "mean_word_prob": 0.8,
        "min_word_prob": 0.6,
        "no_speech_prob": 0.1,
        "compression_ratio": 1.0,
        "fallbacks": 0,
        "speech_ratio": 0.9,
        "level_db": -20.0,
        "audio_s": 2.0,
        "n_words": 5,
        "filler": False,
    }
    base.update(over)
    return ConfidenceFeatures(**base)  # type: ignore[arg-type]


def test_stored_calibrations_match_features() -> None:
    for path, names in (
        (CALIBRATION_PATH, FEATURE_NAMES + CROSS_FEATURE_NAMES),
        (SINGLE_CALIBRATION_PATH, FEATURE_NAMES),
    ):
        raw = json.loads(path.read_text())
        assert tuple(raw["names"]) == names
        assert len(raw["coef"]) == len(raw["mean"]) == len(raw["scale"]) == len(names)


def test_cross_check_features_pick_their_calibration_and_count() -> None:
    single = features()
    agreed = features(cross_checked=True, cross_exact=True)
    disagreed = features(
        cross_checked=True, cross_word_disagreement=1.0, cross_exact=False, cross_char_similarity=0.3
    )
    assert len(feature_vector(single)) == len(FEATURE_NAMES)
    assert len(feature_vector(agreed)) == len(FEATURE_NAMES) + len(CROSS_FEATURE_NAMES)
    assert score(disagreed) < score(agreed)
    assert score(disagreed) < score(single)  # the other recogniser's doubt costs confidence


def test_scores_order_and_clamp() -> None:
    good = score(features())
    bad = score(
        features(
            avg_logprob=-2.5,
            min_token_prob=0.01,
            mean_word_prob=0.05,
            min_word_prob=0.01,
            first_word_any_spelling=0.05,  # a bad decode is unsure in every spelling too
            min_word_any_spelling=0.01,
            no_speech_prob=0.95,
            compression_ratio=3.0,
            fallbacks=2,
            speech_ratio=0.2,
            level_db=-60.0,
            filler=True,
            nbest_posterior=0.05,
            nbest_word_agreement=0.1,
        )
    )
    assert 0.4 <= good <= 1.0
    assert MIN_CONFIDENCE <= bad < 0.1
    assert bad > 0.0  # computed scores are never exactly 0


def test_missing_calibration_falls_back(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cal = load_calibration.__wrapped__(False, tmp_path / "nope.json")
    assert cal.names == FEATURE_NAMES
    assert load_calibration.__wrapped__(True, tmp_path / "nope.json").names[-3:] == CROSS_FEATURE_NAMES
    assert "no usable confidence calibration" in caplog.text


def test_normalisation_for_wer() -> None:
    assert normalise_for_wer("Goodnight!") == "good night"
    assert normalise_for_wer("300... I'm 7") == "three hundred i am seven"
    assert word_errors("Good bye.", "goodbye") == 0
    assert word_errors("turn on the lights", "turn the light") == 2
    assert has_repeated_word("9 9") and not has_repeated_word("bye now")
    assert normalise_for_wer("The 60th, 21st and 2nd.") == "the sixtieth twenty first and second"
    assert normalise_for_wer("3D Audio 7th...") == "three d audio seventh"
    assert normalise_for_wer("1000 ninety-nine") == "1000 ninety nine"


def test_wer_contractions_initialisms_and_compounds() -> None:
    # contractions expanded on both sides (as Whisper's English normaliser does)
    assert word_errors("I am sorry, that's not valid", "I'm sorry, that is not valid") == 0
    assert word_errors("you are calling", "you're calling") == 0
    assert normalise_for_wer("Won't, can't, shouldn’t, we'll, they've, I'd") == (
        "will not can not should not we will they have i would"
    )
    # dotted initialisms joined, single letters left alone
    assert normalise_for_wer("at 5 P.M.") == "at five pm"
    assert normalise_for_wer("a b. c") == "a b c"
    # a word and the same letters split in two match, either side; other splits do not
    assert word_errors("the blacklist", "the black list") == 0
    assert word_errors("play back", "Playback.") == 0
    assert word_errors("X-ray", "xray") == 0
    assert word_errors("the black list", "the black lists") == 1
    assert word_errors("a cat", "acts") == 2
    # up to four words: a spelled-out initialism and a three-part compound
    assert word_errors("MGCP", "M G C P") == 0
    assert word_errors("Call the IAX channel", "call the I A X channel") == 0
    assert word_errors("an open-source PBX", "an open source P B X") == 0
    assert word_errors("a b c d e", "abcde") == 5  # five words never become one
    # homophones and real substitutions stay errors
    assert word_errors("eye", "I.") == 1
    assert word_errors("The last caller was", "The last color was") == 1


def test_nbest_helpers() -> None:
    from audio.hearing.transcript_checks import one_copy, unlooped, word_agreement

    assert one_copy("bye bye bye") == "bye" and one_copy("bye now") == "bye now"
    assert unlooped([5, 6, 5, 6, 5, 6, 99, 100], eot=99) == [5, 6]  # one copy, no end token
    assert word_agreement("turn on the lights", "turn on the lights") == 1.0
    assert word_agreement("turn on the lights", "turn the light") == pytest.approx(0.5)
    assert word_agreement("bye", "five six seven") == 0.0  # clamped, never negative
    assert word_agreement("", "") == 1.0 and word_agreement("", "hi") == 0.0


def test_keep_segments_drops_invented_and_repeated_text() -> None:
    from audio.hearing.confidence_signals import StepStats
    from audio.hearing.transcript_checks import keep_segments

    ts, eot = 1000, 999  # timestamp ids start at 1000 (0.02 s each); 999 ends the text

    def stats(n: int) -> StepStats:
        return StepStats([0.1 * (i + 1) for i in range(n)], [float(i) for i in range(n)], [0.0] * n)

    # <0.00> 5 6 <0.50> <0.50> 7 <1.00> eot over 2 s of audio: all kept, stats follow the tokens
    ids = [ts, 5, 6, ts + 25, ts + 25, 7, ts + 50, eot]
    tokens, kept, dropped = keep_segments(ids, stats(len(ids)), 2.0, ts, eot)
    assert tokens == [5, 6, 7] and not dropped
    assert kept.probs == pytest.approx([0.2, 0.3, 0.6]) and kept.margins == [1.0, 2.0, 5.0]
    # the same segment again, and a segment placed after the 1.2 s of audio ended: dropped
    ids = [ts, 5, 6, ts + 25, ts + 25, 5, 6, ts + 50, ts + 60, 8, ts + 70, eot]
    tokens, _, dropped = keep_segments(ids, stats(len(ids)), 1.2, ts, eot)
    assert tokens == [5, 6] and dropped
    # a repeated tail inside one segment is cut to one copy
    ids = [ts, 3, 4, 3, 4, 3, 4, 3, 4, ts + 50, eot]
    tokens, kept, dropped = keep_segments(ids, stats(len(ids)), 2.0, ts, eot)
    assert tokens == [3, 4] and dropped and len(kept.probs) == 2
    # "Goodbye." then "Good bye." (other tokens, same words): a repeat only when compared by text,
    # whether in segments of their own or sentences of one segment
    spelled = {11: " Goodbye.", 12: " Good", 13: " bye", 14: ".", 15: " Bye", 16: " now", 17: "!"}

    def text_of(seg: list[int]) -> str:
        return "".join(spelled[t] for t in seg)

    ids = [ts, 11, ts + 25, ts + 25, 12, 13, 14, ts + 50, ts + 50, 15, 16, 17, ts + 75, eot]
    assert keep_segments(ids, stats(len(ids)), 2.0, ts, eot)[0] == [11, 12, 13, 14, 15, 16, 17]
    tokens, kept, dropped = keep_segments(ids, stats(len(ids)), 2.0, ts, eot, text_of=text_of)
    assert tokens == [11, 15, 16, 17] and dropped and kept.probs == pytest.approx([0.2, 1.0, 1.1, 1.2])
    ids = [ts, 11, 12, 13, 14, 12, 13, 14, 17, 17, ts + 75, eot]  # "Goodbye. Good bye. Good bye.!!"
    tokens, _, dropped = keep_segments(ids, stats(len(ids)), 2.0, ts, eot, text_of=text_of)
    assert tokens == [11, 17, 17] and dropped
    ids = [ts, 12, 13, 14, 12, 13, 14, 12, ts + 75, eot]  # a loop "Good bye. Good bye. Good": one copy
    tokens, _, dropped = keep_segments(ids, stats(len(ids)), 2.0, ts, eot, text_of=text_of)
    assert tokens == [12, 13, 14] and dropped
    ids = [ts, 15, 14, 16, 14, ts + 50, eot]  # different sentences are kept
    tokens, _, dropped = keep_segments(ids, stats(len(ids)), 2.0, ts, eot, text_of=text_of)
    assert tokens == [15, 14, 16, 14] and not dropped


def test_filler_phrases_match_however_spelled_apart() -> None:
    assert text_key("Good bye...") == text_key("Goodbye!") == "goodbye"
    assert is_filler("Goodnight.") and is_filler("Good night.") and is_filler("Thank you!")
    assert is_filler("Good bye") and is_filler("Bye.") and is_filler("you")
    assert not is_filler("Good night, robot.") and not is_filler("Five.") and not is_filler("")


def test_metrics() -> None:
    assert auroc([0.9, 0.8, 0.1], [True, True, False]) == 1.0
    assert auroc([0.1, 0.9], [True, False]) == 0.0
    assert ece([1.0, 0.0], [True, False]) == 0.0
    assert ece([0.9, 0.9], [False, False]) == pytest.approx(0.9)


def test_step_stats_margin_and_entropy() -> None:
    from audio.hearing.confidence_signals import step_stats

    logits = [[2.0, 0.0, 0.0], [0.0, 0.0, float("-inf")]]
    stats = step_stats(logits, [0, 1])
    p0 = math.exp(2.0) / (math.exp(2.0) + 2.0)
    assert stats.probs == pytest.approx([p0, 0.5])
    assert stats.margins == pytest.approx([2.0, 0.0])  # chosen vs best other token, in nats
    assert stats.entropies[1] == pytest.approx(math.log(2.0))  # -inf (suppressed) tokens ignored
    assert 0.0 < stats.entropies[0] < math.log(3.0)
    assert step_stats([], [1, 2]).probs == []


def test_word_probability_in_any_spelling() -> None:
    from audio.hearing.confidence_signals import SpellingKeys, step_stats
    from audio.hearing.wer import normalise_for_wer

    vocab = ["9", " nine", " Nine", " bye", " Bye.", ".", " ", "<|endoftext|>"]
    spelling = SpellingKeys.build(
        lambda i: vocab[i] if not vocab[i].startswith("<|") else "", 8, normalise_for_wer
    )
    k = spelling.keys
    assert k[0] == k[1] == k[2] != k[3] == k[4] and k[5] == k[6] == k[7] == SpellingKeys.NO_WORD
    # Torn between spellings of one word: unsure token, sure word. Torn between words: unsure both.
    # Punctuation and the suppressed/extra ids (timestamps) are not words: left out of both.
    logits = [
        [1.0, 1.0, 1.0, -1e9, -1e9, 1.0, 0.0, 0.0, 0.5, float("-inf")],
        [0.0, -1e9, -1e9, 0.0, 0.0, -1e9, -1e9, -1e9, -1e9, -1e9],
        [0.0] * 10,
    ]
    stats = step_stats(logits, [0, 3, 5], spelling)
    assert stats.probs[0] < 0.3 and stats.any_spelling[0] == pytest.approx(1.0)
    assert stats.any_spelling[1] == pytest.approx(2 / 3)  # " bye" and " Bye." against "9"
    assert math.isnan(stats.any_spelling[2])  # "." is not a word
    assert step_stats(logits, [0, 3, 5]).any_spelling == []  # without keys: not computed


def test_nbest_stats_and_when_the_beam_wins() -> None:
    from audio.hearing.transcript_checks import Hypothesis, beam_wins, nbest_stats

    def hyp(text: str, score: float) -> Hypothesis:
        return Hypothesis([], text, score, 2, False)

    torn = [hyp("Bye.", -1.0), hyp("Five.", -1.0), hyp("bye bye", -30.0)]
    stats = nbest_stats("Bye", torn)
    assert stats.posterior == pytest.approx(0.5) and stats.word_agreement == pytest.approx(0.5)
    assert nbest_stats("six", torn).posterior == pytest.approx(0.0, abs=1e-9)
    assert not beam_wins("Five.", "Bye.", torn, 1.0)  # equal mass: keep the greedy words
    clearer = [hyp("Five.", -0.5), hyp("Bye.", -2.0)]
    assert beam_wins("Five.", "Bye.", clearer, 1.0)
    no_repeat = [hyp("Goodbye Goodbye", -0.1)]
    assert not beam_wins("Goodbye Goodbye", "Goodbye.", no_repeat, 1.0)  # no new repeat
    # The beam may not stop early: shorter hypotheses hold more summed-probability mass.
    greedy = "Thank you for calling. If you know the extension, dial it now. Or press 0."
    first_only = [hyp("Thank you for calling.", -3.0), hyp(greedy, -9.0)]
    assert not beam_wins("Thank you for calling.", greedy, first_only, 8.0)  # 0.5 words/s
    assert beam_wins("Thank you for calling.", greedy, first_only, 2.0)  # 2 words/s: a real reading
    # A different, shorter reading (junk the greedy pass invented over a mumble) still wins.
    junk = [hyp("You.", -1.0), hyp("I'm going to go ahead and see.", -6.0)]
    assert beam_wins("You.", "I'm going to go ahead and see.", junk, 2.0)


def test_stopped_early() -> None:
    from audio.hearing.transcript_checks import stopped_early

    greedy = "Press 1 to list users. Press 2 to kick all users. Press 3 to mute them."
    assert stopped_early("Press one to list users.", greedy, 15.0)  # numbers spelled either way
    assert not stopped_early("Press one to list users.", greedy, 4.0)
    assert not stopped_early("Please wait.", greedy, 15.0)  # not the greedy text's start
    assert not stopped_early(greedy, greedy, 15.0) and not stopped_early("", greedy, 15.0)


def test_reads_on() -> None:
    from audio.hearing.transcript_checks import reads_on

    short = "Press 1 to mute. 7 or 9 to change your volume."
    assert reads_on(short, "Press one to mute. Seven or nine to change your volume. Or eight to exit.")
    assert reads_on(short, "Press 1 to mute. 7 or 9 to change the volume. Or 8 to exit.")  # 1 in 5 differs
    assert not reads_on(short, short)  # nothing more read
    assert not reads_on(short, "Press 1 to mute. 7 or 9.")  # shorter
    assert not reads_on(
        "But as the writer should by time deceased,", "But as the writer should buy time to cease."
    )
    assert not reads_on("", "Hello there.")


def test_unfinished_at() -> None:
    from audio.hearing.transcript_checks import unfinished_at

    ts = 1000  # first timestamp id; text ids below it

    def t(seconds: float) -> int:
        return ts + round(seconds / 0.02)

    assert unfinished_at([t(0), 5, 6, t(3.2), t(3.2), 7, t(6.0), t(6.0)], ts) == pytest.approx(6.0)
    assert unfinished_at([t(0), 5, 6, t(3.2)], ts) is None  # last segment closed
    assert unfinished_at([t(0), 5, 6, t(3.2), t(3.2), 7, t(6.0)], ts) is None
    assert unfinished_at([t(0), t(0)], ts) is None and unfinished_at([], ts) is None  # nothing read


def test_unstable_decode_lowers_the_score() -> None:
    stable = dict(min_token_prob=0.9, first_token_prob=0.9, nbest_posterior=1.0, nbest_word_agreement=1.0)
    torn = dict(min_token_prob=0.05, first_token_prob=0.1, nbest_posterior=0.1, nbest_word_agreement=0.2)
    assert score(features(**torn)) < score(features(**stable))


def test_rivals_in_the_nbest_lower_the_score() -> None:
    assert score(features(nbest_posterior=0.2)) < score(features(nbest_posterior=1.0))
    assert score(features(nbest_word_agreement=0.3)) < score(features(nbest_word_agreement=1.0))


def test_report_breaks_down_by_folder() -> None:
    from audio.tools.eval_confidence import ClipRow, report

    def row(folder: str, text: str, conf: float) -> ClipRow:
        return ClipRow(f"{folder}/x.wav", "yes", "speech", "", text, conf, word_errors("yes", text), 1, None)

    rows = [row("a", "yes", 0.9), row("a", "no", 0.2), row("b", "yes", 0.8)]
    out = report(rows)
    assert out["auroc_speech"] == 1.0 and out["wer"] == pytest.approx(1 / 3, abs=1e-4)
    assert out["by_folder"]["a"]["auroc_speech"] == 1.0
    assert out["by_folder"]["b"]["auroc_speech"] is None  # one class only: undefined, not NaN
    assert "by_folder" not in report(rows[:2])


def test_cross_validation_holds_out_each_source() -> None:
    from audio.tools.eval_confidence import ClipRow, cross_validate

    rng = np.random.default_rng(0)

    def row(path: str, ok: bool) -> ClipRow:
        lp = float(rng.normal(-0.3 if ok else -1.2, 0.2))
        f = features(avg_logprob=lp, min_token_prob=math.exp(lp), nbest_posterior=0.9 if ok else 0.3)
        text = "yes" if ok else "no"
        return ClipRow(path, "yes", "speech", "", text, 0.5, word_errors("yes", text), 1, f.as_dict())

    train = [row(f"gen/{i}.wav", i % 3 != 0) for i in range(60)]
    held = [row(f"{src}/{i}.wav", i % 2 == 0) for src in ("a", "b") for i in range(10)]
    out = cross_validate(train, held)
    assert set(out["groups"]) == {"a", "b"} and out["pooled"]["clips"] == 20
    assert out["pooled"]["auroc_speech"] > 0.9  # the signal carries over to unseen sources
    assert all(r.confidence == 0.5 for r in held)  # inputs untouched; rescored copies are used


def test_cross_validation_uses_the_cross_check_when_rows_have_it() -> None:
    from audio.tools.eval_confidence import ClipRow, cross_validate, fit_calibrations

    rng = np.random.default_rng(1)

    def row(path: str, ok: bool) -> ClipRow:
        # Whisper is equally sure either way; only the second recogniser's agreement tells.
        lp = float(rng.normal(-0.4, 0.2))
        dis = float(rng.uniform(0.0, 0.2) if ok else rng.uniform(0.5, 1.0))
        f = features(
            avg_logprob=lp,
            cross_checked=True,
            cross_word_disagreement=dis,
            cross_exact=dis < 0.1,
            cross_char_similarity=1.0 - dis,
        )
        text = "yes" if ok else "no"
        return ClipRow(path, "yes", "speech", "", text, 0.5, word_errors("yes", text), 1, f.as_dict())

    train = [row(f"gen/{i}.wav", i % 3 != 0) for i in range(90)]
    held = [row(f"{src}/{i}.wav", i % 2 == 0) for src in ("a", "b") for i in range(12)]
    assert set(fit_calibrations(train)) == {False, True}
    with_check = cross_validate(train, held)["pooled"]["auroc_speech"]
    without = cross_validate(train, held, cross=False)["pooled"]["auroc_speech"]
    assert with_check > 0.95 and without < 0.75


def test_confidence_features_of_a_decode() -> None:
    from audio.hearing.cross_check import Agreement
    from audio.hearing.transcript_checks import NBest
    from audio.hearing.whisper_decode import Decode, DecodeContext, confidence_features, cross_checked

    nan = float("nan")
    d = Decode(
        tokens=[1, 2, 3],
        text=" Bye bye.",
        avg_logprob=-0.3,
        token_probs=[0.9, 0.4, 0.8],
        token_margins=[3.0, 1.0, 2.0],
        token_entropies=[0.1, 0.9, 0.2],
        no_speech_prob=0.05,
        token_any_spelling=[0.95, nan, 0.5],
        compression_ratio=1.1,
        looped=False,
        repeated=False,
    )
    ctx = DecodeContext(
        fallbacks=1,
        speech_ratio=0.7,
        level_db=-30.0,
        audio_s=1.2,
        nbest=NBest(0.6, 0.8),
        changed_by_beam=True,
        voice_prob=0.9,
    )
    f = confidence_features(d, [0.9, 0.32], ctx)
    assert (f.min_token_prob, f.first_token_prob) == (0.4, 0.9)
    assert (f.first_word_any_spelling, f.min_word_any_spelling) == (0.95, 0.5)  # NaN: not a word
    assert (f.min_token_margin, f.mean_token_margin) == (1.0, pytest.approx(2.0))
    assert (f.max_token_entropy, f.mean_token_entropy) == (0.9, pytest.approx(0.4))
    assert (f.mean_word_prob, f.min_word_prob) == (pytest.approx(0.61), 0.32)
    assert f.n_words == 2 and f.repeated_words and f.filler and not f.cross_checked  # "bye bye" is one
    assert (f.nbest_posterior, f.nbest_word_agreement, f.changed_by_beam, f.fallbacks) == (0.6, 0.8, True, 1)
    # A decode whose per-token figures are missing gets the neutral defaults; no words count as 0.
    bare = confidence_features(Decode([], "Hm.", -1.0, [], [], [], 0.2, [], 0.9, False, False), [], ctx)
    assert (bare.min_token_prob, bare.min_token_margin, bare.max_token_entropy) == (1.0, 20.0, 0.0)
    assert (bare.min_word_any_spelling, bare.mean_word_prob) == (1.0, 0.0)
    agreed = cross_checked(f, Agreement(word_disagreement=0.5, exact=False, char_similarity=0.7))
    assert (
        agreed.cross_checked and agreed.cross_word_disagreement == 0.5 and agreed.cross_char_similarity == 0.7
    )
