"""The lock files the bootstrap and the Pi installer install: every dependency pinned within the
ranges pyproject.toml gives, with hashes, for Linux x86_64 and aarch64 on Python 3.11."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parent.parent
LOCKS = {"dev": REPO / "requirements/lock.txt", "pi": REPO / "requirements/lock-pi.txt"}
MACHINES = ("x86_64", "aarch64")


def read_lock(path: Path) -> dict[str, tuple[Version, str, int]]:
    """name -> (pinned version, marker text, number of hashes)."""
    text = path.read_text().replace("\\\n", " ")
    pins: dict[str, tuple[Version, str, int]] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        spec = line.split(" --hash=", 1)[0].strip()
        req = Requirement(spec)
        (pin,) = req.specifier  # exactly one "==" each
        assert pin.operator == "==", line
        pins[canonicalize_name(req.name)] = (
            Version(pin.version),
            str(req.marker or ""),
            len(re.findall(r"--hash=sha256:", line)),
        )
    return pins


def wanted(extra: str) -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [Requirement(r) for r in [*project["dependencies"], *project["optional-dependencies"][extra]]]


@pytest.mark.parametrize("extra", sorted(LOCKS))
@pytest.mark.parametrize("machine", MACHINES)
def test_every_dependency_is_pinned_within_its_range_with_hashes(extra: str, machine: str) -> None:
    pins = read_lock(LOCKS[extra])
    env: dict[str, str] = {k: str(v) for k, v in default_environment().items()} | {
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": machine,
        "python_version": "3.11",
        "python_full_version": "3.11.2",  # bookworm's
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }
    assert all(n > 0 for _, _, n in pins.values()), "a pin without hashes"
    for req in wanted(extra):
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        name = canonicalize_name(req.name)
        assert name in pins, f"{req} is not in {LOCKS[extra].name}: update the lock (docs/deploy.md)"
        version, marker, _ = pins[name]
        assert req.specifier.contains(version, prereleases=True), f"{name}=={version} is outside {req}"
        pinned = Requirement(f"{name}; {marker}") if marker else None
        assert pinned is None or pinned.marker is None or pinned.marker.evaluate(env), (name, marker)
