"""The doctor's memory check: what the configuration needs against what the machine has free.

The needs are estimates per part, resident (RSS) in MiB, from ``robot-face bench footprint`` on
this release (x86-64, models as shipped; an aarch64 Pi measures within ~10 %): the runtime itself
(Python, its libraries, the face and the link), Whisper (scaled from its ``model.bin``), Silero with
onnxruntime's library, the Moonshine cross-check when it is on, the Piper voice (scaled from its
``.onnx``), and the working room a conversation takes on top. ``MemAvailable`` of ``/proc/meminfo``
(the kernel's estimate of what can be had without swapping) must cover it while robot-face is not
running; run the doctor with the service stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from device.doctor.result import CheckResult

if TYPE_CHECKING:
    from device.config import Config

RUNTIME_MB = 80
"""Python, numpy, onnxruntime/CTranslate2 libraries, the face, the link, threads."""
WHISPER_OVERHEAD_MB = 55
"""Whisper beyond its ``model.bin`` size (tiny.en: 72 MiB file, 130 MiB resident)."""
WHISPER_DEFAULT_MB = 130
"""When the model file cannot be found (a model name): tiny.en's figure."""
SILERO_MB = 30
MOONSHINE_MB = 75
"""Moonshine tiny (int8 encoder and merged decoder, tokenizer)."""
VOICE_OVERHEAD_MB = 12
"""Piper beyond its ``.onnx`` size (en_US-joe-medium: 60 MiB file, 72 MiB resident)."""
VOICE_DEFAULT_MB = 75
CONVERSATION_MB = 40
"""What a conversation adds to the figures after start (the soak's plateau, with a margin)."""
OPENAI_STT_MB = 10
"""The OpenAI-compatible STT client instead of the local models."""


@dataclass(frozen=True)
class PartNeed:
    """One part's estimated resident memory (MiB)."""

    name: str
    mb: int


def _file_mb(path: Path) -> int | None:
    try:
        return int(path.stat().st_size / (1024 * 1024))
    except OSError:
        return None


def memory_needs(config: Config) -> list[PartNeed]:
    """The estimated needs of each part ``config`` loads."""
    needs = [PartNeed("runtime", RUNTIME_MB)]
    hearing = config.hearing
    if hearing.stt_provider == "whisper":
        needs.append(PartNeed("whisper", _whisper_mb(hearing.stt_model)))
        needs.append(PartNeed("silero", SILERO_MB))
        if hearing.stt_cross_check_model.strip().lower() != "off":
            needs.append(PartNeed("moonshine", MOONSHINE_MB))
    else:
        needs.append(PartNeed("stt client", OPENAI_STT_MB))
    needs.append(PartNeed("voice", _voice_mb(config.speaking.voice)))
    needs.append(PartNeed("conversation", CONVERSATION_MB))
    return needs


def _whisper_mb(setting: str) -> int:
    from audio.hearing.whisper_stt import packaged_model_path

    folder = Path(setting).expanduser() if setting else Path(packaged_model_path())
    size = _file_mb(folder / "model.bin")
    return WHISPER_DEFAULT_MB if size is None else size + WHISPER_OVERHEAD_MB


def _voice_mb(setting: str) -> int:
    from audio.speaking.tts import VoiceNotFound, resolve_voice_path

    try:
        size = _file_mb(resolve_voice_path(setting))
    except VoiceNotFound:
        size = None
    return VOICE_DEFAULT_MB if size is None else size + VOICE_OVERHEAD_MB


def read_meminfo(path: str | Path = "/proc/meminfo") -> dict[str, int]:
    """``/proc/meminfo`` as {field: kB}."""
    fields: dict[str, int] = {}
    for line in Path(path).read_text().splitlines():
        key, _, value = line.partition(":")
        parts = value.split()
        if parts and parts[0].isdigit():
            fields[key.strip()] = int(parts[0])
    return fields


def check_memory(config: Config, meminfo: Callable[[], dict[str, int]] = read_meminfo) -> CheckResult:
    """Warn when ``MemAvailable`` is below what ``config`` needs (a note when it cannot be read)."""
    name = "memory"
    try:
        info = meminfo()
        available = info["MemAvailable"] // 1024
        total = info.get("MemTotal", 0) // 1024
    except (OSError, KeyError, ValueError) as err:
        return CheckResult(name, "note", f"cannot read the free memory ({err})")
    needs = memory_needs(config)
    need = sum(p.mb for p in needs)
    parts = ", ".join(f"{p.name} {p.mb}" for p in needs)
    detail = f"needs ~{need} MiB ({parts}); {available} MiB available of {total} MiB"
    if available >= need:
        return CheckResult(name, "ok", detail)
    fix = (
        'use the small profile of docs/deploy.md (hearing.stt_cross_check_model = "off" saves '
        f"~{MOONSHINE_MB} MiB), stop other programs (a desktop session takes 300+ MiB), or add swap"
    )
    return CheckResult(name, "warn", f"{detail}: robot-face may be killed when memory runs out", fix)
