"""Parse ``mqtt://user:pass@host:port`` / ``mqtts://...`` broker URLs for the harness tools."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit


@dataclass(frozen=True)
class BrokerAddress:
    """Where and how to connect: host, port, TLS and optional credentials."""

    host: str
    port: int
    tls: bool = False
    username: str | None = None
    password: str | None = None


def parse_broker_url(url: str) -> BrokerAddress:
    """``mqtt://host[:1883]`` or ``mqtts://host[:8883]`` (credentials in the URL are allowed)."""
    if "://" not in url:
        url = f"mqtt://{url}"
    parts = urlsplit(url)
    if parts.scheme not in ("mqtt", "mqtts", "tcp", "ssl"):
        raise ValueError(f"broker URL {url!r}: scheme must be mqtt:// or mqtts://")
    if not parts.hostname:
        raise ValueError(f"broker URL {url!r} has no host")
    tls = parts.scheme in ("mqtts", "ssl")
    try:
        port = parts.port or (8883 if tls else 1883)
    except ValueError as err:
        raise ValueError(f"broker URL {url!r}: bad port ({err})") from None
    return BrokerAddress(
        host=parts.hostname,
        port=port,
        tls=tls,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
    )
