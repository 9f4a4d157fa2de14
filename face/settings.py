"""Settings of the face: look, life, expressions and renderer choice."""

from __future__ import annotations

from dataclasses import dataclass, field


def _default_aliases() -> dict[str, str]:
    return {
        "joy": "happy",
        "joyful": "happy",
        "glad": "happy",
        "smile": "happy",
        "unhappy": "sad",
        "sorrow": "sad",
        "surprise": "surprised",
        "shocked": "surprised",
        "mad": "angry",
        "anger": "angry",
        "think": "thinking",
        "pondering": "thinking",
        "puzzled": "confused",
        "excitement": "excited",
        "tired": "sleepy",
        "calm": "neutral",
    }


@dataclass(frozen=True)
class FaceSettings:
    """How the face looks and lives (one frozen dataclass, every field defaulted)."""

    renderer: str = "browser"
    """Which renderer draws the face: "terminal", "browser", "pygame" or "none" (default "browser")."""
    fps: int = 30
    """Frames per second of the face loop (default 30)."""
    browser_host: str = "127.0.0.1"
    """Address the browser face page is served on (default "127.0.0.1")."""
    browser_port: int = 8765
    """TCP port the browser face page is served on; 0 picks a free port (default 8765)."""
    browser_text_box: bool = False
    """Show a typed-text box under the browser face (accessibility/testing; default False)."""
    pygame_fullscreen: bool = True
    """pygame renderer: full screen (True) or an 800x480 window (False) (default True)."""
    pygame_width: int = 800
    """pygame renderer window width in pixels when not full screen (default 800)."""
    pygame_height: int = 480
    """pygame renderer window height in pixels when not full screen (default 480)."""
    terminal_width: int = 48
    """Terminal renderer width in character cells (default 48)."""
    eye_colour: str = "#40e0ff"
    """Eye and mouth colour, hex "#rrggbb" (default "#40e0ff", cyan)."""
    background_colour: str = "#000000"
    """Background colour, hex "#rrggbb" (default "#000000")."""
    listening_colour: str = "#60ff9a"
    """Eye colour while listening, hex (default "#60ff9a", green)."""
    offline_colour: str = "#ffaa00"
    """Eye colour while the agent or broker is unreachable, hex (default "#ffaa00", amber)."""
    error_colour: str = "#ff3030"
    """Eye colour in the error state, hex (default "#ff3030", red)."""
    eye_size: float = 1.0
    """Eye size multiplier relative to the default eye (default 1.0)."""
    eye_spacing: float = 1.0
    """Distance between the eyes, multiplier (default 1.0)."""
    corner_roundness: float = 0.35
    """Eye corner roundness, 0 = square .. 1 = fully round (default 0.35)."""
    pupil_size: float = 0.0
    """Pupil diameter as a fraction of the eye width; 0 draws no pupils, Cozmo-style (default 0.0)."""
    brows: bool = True
    """Draw eyebrows for expressions that use them (default True)."""
    mouth: bool = True
    """Draw a mouth (default True)."""
    asleep_brightness: float = 0.3
    """Brightness while asleep, 0..1 (default 0.3)."""
    blink_min_s: float = 2.0
    """Shortest interval between blinks, in seconds (default 2.0)."""
    blink_max_s: float = 6.0
    """Longest interval between blinks, in seconds (default 6.0)."""
    saccade_min_s: float = 0.8
    """Shortest interval between small gaze shifts, in seconds (default 0.8)."""
    saccade_max_s: float = 3.0
    """Longest interval between small gaze shifts, in seconds (default 3.0)."""
    breath_period_s: float = 4.0
    """Breathing period while awake, in seconds (default 4.0; asleep breathes 1.6x slower)."""
    wake_duration_s: float = 1.2
    """Length of the wake-up animation, after which the face is idle, in seconds (default 1.2)."""
    expression_blend_s: float = 0.35
    """Time to blend into a new expression, in seconds (default 0.35)."""
    expression_hold_s: float = 4.0
    """How long an expression holds after it was set and speech ended, in seconds (default 4.0)."""
    aliases: dict[str, str] = field(default_factory=_default_aliases)
    """Extra emotion tag names mapped to canonical ones (default {"joy": "happy", "mad": "angry", ...})."""
