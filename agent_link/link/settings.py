"""Settings of the MQTT link to the broker."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit


class LinkConfigError(ValueError):
    """A link setting is unusable (bad broker URL, unreadable password / certificate file);
    ``key`` names it when known (``password_file``, ``ca_file``...)."""

    def __init__(self, message: str, key: str = "") -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class LinkSettings:
    """How the device reaches the MQTT broker (protocol v1: MQTT 5, QoS 1, persistent session)."""

    broker: str = "mqtt://127.0.0.1:1883"
    """Broker URL, ``mqtt://host[:port]`` (default port 1883) or ``mqtts://host[:port]`` for TLS
    (default port 8883) (default ``mqtt://127.0.0.1:1883``)."""
    root: str = "robotface"
    """Topic root (default ``robotface``)."""
    keepalive_s: int = 30
    """MQTT keepalive in seconds; the broker publishes the Last Will after 1.5× this without traffic
    (default 30)."""
    session_expiry_s: int = 3600
    """MQTT 5 session expiry in seconds: how long the broker keeps the session and queues QoS 1
    commands while the device is offline (default 3600, the contract's minimum)."""
    username: str | None = None
    """Broker user name, or None for anonymous (default None)."""
    password_file: str | None = None
    """File holding the broker password (first line; never put the password itself in the config or
    the command line) (default None: no password)."""
    ca_file: str | None = None
    """CA certificate file (PEM) to verify the broker with mqtts://; None = system CAs (default None)."""
    cert_file: str | None = None
    """Client certificate file (PEM) for mutual TLS, or None (default None)."""
    key_file: str | None = None
    """Private key file (PEM) of ``cert_file``; None = the key is inside ``cert_file`` (default None)."""
    tls_insecure: bool = False
    """Skip verifying the broker's certificate and host name (testing only!) (default False)."""
    reconnect_min_s: float = 1.0
    """First reconnect delay in seconds; doubles per failed attempt, with jitter (default 1.0)."""
    reconnect_max_s: float = 60.0
    """Largest reconnect delay in seconds (default 60.0)."""
    connect_timeout_s: float = 10.0
    """Seconds to wait for the broker's CONNACK (and any other single MQTT operation) (default 10.0)."""
    publish_timeout_s: float = 10.0
    """Seconds to wait for a PUBACK before treating the connection as broken (default 10.0)."""
    max_payload_bytes: int = 65536
    """Largest command payload accepted, in bytes (the contract's 64 KiB); larger ones are still
    handed on so they get a ``command_rejected`` with a clear detail (default 65536)."""
    outbox_batch: int = 50
    """Events read from the outbox per batch while draining (default 50)."""
    inflight_window: int = 16
    """How many events (QoS 1 publishes, in order) may await their PUBACK at once, in events; 1 = one
    at a time. Fewer if the broker's Receive Maximum is lower (default 16)."""

    def __post_init__(self) -> None:
        self.endpoint()
        if self.keepalive_s < 1:
            raise LinkConfigError(f"keepalive_s must be at least 1, got {self.keepalive_s}")
        if self.session_expiry_s < 3600:
            raise LinkConfigError(
                f"session_expiry_s must be at least 3600 (protocol v1), got {self.session_expiry_s}"
            )
        if not 0 < self.reconnect_min_s <= self.reconnect_max_s:
            raise LinkConfigError(
                f"need 0 < reconnect_min_s <= reconnect_max_s, got {self.reconnect_min_s}, "
                f"{self.reconnect_max_s}"
            )
        if self.cert_file is None and self.key_file is not None:
            raise LinkConfigError("key_file is set but cert_file is not")
        for name in (
            "connect_timeout_s",
            "publish_timeout_s",
            "max_payload_bytes",
            "outbox_batch",
            "inflight_window",
        ):
            if getattr(self, name) <= 0:
                raise LinkConfigError(f"{name} must be > 0, got {getattr(self, name)}")

    def endpoint(self) -> tuple[str, int, bool]:
        """``(host, port, tls)`` of :attr:`broker`; raises :class:`LinkConfigError` if it is malformed."""
        try:
            url = urlsplit(self.broker)
            port = url.port
        except ValueError as err:
            raise LinkConfigError(f"broker URL {self.broker!r} is malformed: {err}") from None
        if url.scheme not in ("mqtt", "mqtts"):
            raise LinkConfigError(f"broker URL {self.broker!r} must start with mqtt:// or mqtts://")
        if not url.hostname:
            raise LinkConfigError(f"broker URL {self.broker!r} has no host")
        if url.path not in ("", "/") or url.query or url.username or url.password:
            raise LinkConfigError(
                f"broker URL {self.broker!r} must be just scheme://host[:port] "
                "(credentials go in username / password_file)"
            )
        tls = url.scheme == "mqtts"
        return url.hostname, port or (8883 if tls else 1883), tls

    def read_password(self) -> str | None:
        """The password from :attr:`password_file` (first line), or None if no file is set."""
        if self.password_file is None:
            return None
        try:
            text = Path(self.password_file).read_text(encoding="utf-8")
        except OSError as err:
            raise LinkConfigError(
                f"cannot read password_file {self.password_file!r}: {err}", "password_file"
            ) from None
        lines = text.splitlines()
        return lines[0] if lines else ""

    def check_files(self) -> None:
        """Raise :class:`LinkConfigError` if a configured password / TLS file cannot be read."""
        self.read_password()
        for name in ("ca_file", "cert_file", "key_file"):
            path = getattr(self, name)
            if path is not None and not Path(path).is_file():
                raise LinkConfigError(f"{name} {path!r} does not exist or is not a file", name)
