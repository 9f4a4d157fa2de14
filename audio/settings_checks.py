"""Range and choice checks for the settings dataclasses: one error that names the key."""

from __future__ import annotations

from collections.abc import Iterable

Check = tuple[str, bool, str]
"""``(field, whether its value is fine, the rule it breaks)``."""


def raise_first_failed(section: str, settings: object, checks: Iterable[Check]) -> None:
    """Raise ValueError ``"section.field: rule, got value"`` for the first check that failed
    (``device.config`` turns it into a ConfigError naming ``section.field``)."""
    for key, ok, rule in checks:
        if not ok:
            raise ValueError(f"{section}.{key}: {rule}, got {getattr(settings, key)!r}")


def listed(values: Iterable[object]) -> str:
    """``"a, b, c"``: the allowed values, for a rule's text."""
    return ", ".join(map(str, values))
