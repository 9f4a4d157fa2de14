"""Settings of the face: look, life, expressions and renderer choice."""

from __future__ import annotations

from dataclasses import dataclass, field

from face.params import hex_to_rgb
from face.state import EMOTIONS

Check = tuple[str, bool, str]
"""``(field, whether its value is fine, the rule it breaks)``, as in the other parts' settings."""

RENDERERS: tuple[str, ...] = ("terminal", "browser", "pygame", "none")
"""Valid values of ``FaceSettings.renderer`` (``face.renderers.choice`` builds each; case-insensitive)."""


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
    idle_fps: int = 4
    """Frames per second while no renderer is watched (renderer "none", or the browser face with no
    page connected): the face keeps living but wakes the process less (a page that connects gets
    the last frame at once and the full ``fps`` from the next frame, at most 1 / idle_fps later)
    (default 4)."""
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

    def validate(self) -> None:
        """Raise ValueError naming the key ("face.renderer: ...") for a value that cannot work;
        ``device.config`` calls it when it loads the configuration."""
        checks: tuple[Check, ...] = (
            (
                "renderer",
                self.renderer.strip().lower() in RENDERERS,
                f"must be one of {', '.join(RENDERERS)}",
            ),
            ("fps", self.fps >= 1, "must be >= 1"),
            ("idle_fps", 1 <= self.idle_fps <= self.fps, f"must be between 1 and fps ({self.fps})"),
            (
                "browser_port",
                0 <= self.browser_port <= 65535,
                "must be a TCP port 0..65535 (0 = any free port)",
            ),
            ("pygame_width", self.pygame_width >= 1, "must be >= 1"),
            ("pygame_height", self.pygame_height >= 1, "must be >= 1"),
            *((key, _is_colour(getattr(self, key)), 'must be a hex colour "#rrggbb"') for key in _COLOURS),
            ("eye_size", self.eye_size > 0, "must be > 0"),
            ("eye_spacing", self.eye_spacing > 0, "must be > 0"),
            ("corner_roundness", 0.0 <= self.corner_roundness <= 1.0, "must be between 0.0 and 1.0"),
            ("pupil_size", 0.0 <= self.pupil_size <= 1.0, "must be between 0.0 and 1.0"),
            ("asleep_brightness", 0.0 <= self.asleep_brightness <= 1.0, "must be between 0.0 and 1.0"),
            ("blink_min_s", self.blink_min_s > 0, "must be > 0"),
            (
                "blink_max_s",
                self.blink_max_s >= self.blink_min_s,
                f"must be >= blink_min_s ({self.blink_min_s})",
            ),
            ("saccade_min_s", self.saccade_min_s > 0, "must be > 0"),
            (
                "saccade_max_s",
                self.saccade_max_s >= self.saccade_min_s,
                f"must be >= saccade_min_s ({self.saccade_min_s})",
            ),
            ("breath_period_s", self.breath_period_s > 0, "must be > 0"),
            ("wake_duration_s", self.wake_duration_s >= 0, "must be >= 0"),
            ("expression_blend_s", self.expression_blend_s >= 0, "must be >= 0"),
            ("expression_hold_s", self.expression_hold_s >= 0, "must be >= 0"),
        )
        for key, ok, rule in checks:
            if not ok:
                raise ValueError(f"face.{key}: {rule}, got {getattr(self, key)!r}")
        unknown = {
            alias: emotion for alias, emotion in self.aliases.items() if emotion.lower() not in EMOTIONS
        }
        if unknown:
            raise ValueError(
                f"face.aliases: each alias must name one of the emotions {', '.join(EMOTIONS)}, got {unknown!r}"
            )


_COLOURS = ("eye_colour", "background_colour", "listening_colour", "offline_colour", "error_colour")


def _is_colour(value: str) -> bool:
    try:
        hex_to_rgb(value)
    except ValueError:
        return False
    return True
