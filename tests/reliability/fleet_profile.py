"""Start mosquitto with the repository's fleet profile (deploy/mosquitto), paths and ports rewritten."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from agent_link.harness.broker import Mosquitto, free_port
from tests.pki import make_ca, make_cert

PROFILE = Path(__file__).resolve().parents[2] / "deploy" / "mosquitto"
USERS = ("agent", "harness", "dev1", "dev2")
"""Users in the test password file; each password is ``pw-<user>``."""


@dataclass
class FleetBroker:
    """The running profile: device listener, agent listener, certificate directory."""

    broker: Mosquitto
    device_port: int
    agent_port: int
    pki: Path

    def password_file(self, user: str, password: str | None = None) -> Path:
        """A file holding ``user``'s password (or ``password``)."""
        path = self.pki / f"{user}.password"
        path.write_text((password if password is not None else f"pw-{user}") + "\n")
        return path


def start_fleet_broker(workdir: Path) -> FleetBroker:
    """PKI (CA, server, dev1/dev2 client certs, a rogue CA's cert), password file, the profile."""
    pki = workdir / "etc"
    pki.mkdir(parents=True)
    make_ca(pki, "ca")
    make_ca(pki, "rogue-ca")
    make_cert(pki, "server", "ca", "IP:127.0.0.1,DNS:localhost")
    for user in ("dev1", "dev2"):
        make_cert(pki, user, "ca", f"DNS:{user}")
    make_cert(pki, "rogue", "rogue-ca", "DNS:dev1")
    passwd = pki / "passwd"
    for i, user in enumerate(USERS):
        flags = ["-c", "-b"] if i == 0 else ["-b"]
        subprocess.run(
            ["mosquitto_passwd", *flags, str(passwd), user, f"pw-{user}"], check=True, capture_output=True
        )
    (pki / "acl").write_text((PROFILE / "acl").read_text())
    device_port, agent_port = free_port(), free_port()
    data = workdir / "data"
    text = (PROFILE / "mosquitto.conf").read_text()
    text = text.replace("/etc/mosquitto/robot-face/", f"{pki}/").replace("/var/lib/mosquitto/", f"{data}/")
    text = text.replace("listener 8883\n", f"listener {device_port} 127.0.0.1\n")
    text = text.replace("listener 8884 10.0.0.1\n", f"listener {agent_port} 127.0.0.1\n")
    text = text.replace("log_dest syslog\n", f"log_dest file {workdir / 'mosquitto.log'}\nlog_type all\n")
    broker = Mosquitto(workdir, port=device_port)
    broker.config_path.write_text("user root\n" + text)
    broker.start()
    return FleetBroker(broker, device_port, agent_port, pki)
