"""Start mosquitto with the repository's fleet profile (deploy/mosquitto), paths and ports rewritten."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from agent_link.broker import Mosquitto, free_port

PROFILE = Path(__file__).resolve().parents[2] / "deploy" / "mosquitto"
USERS = ("agent", "harness", "dev1", "dev2")
"""Users in the test password file; each password is ``pw-<user>``."""


def openssl(*args: str, cwd: Path) -> None:
    """Run the openssl CLI (fails loudly)."""
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(d: Path, name: str) -> None:
    """A throw-away CA ``name.crt`` / ``name.key`` in ``d``."""
    openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{name}.key", cwd=d)
    openssl("req", "-x509", "-new", "-key", f"{name}.key", "-days", "2", "-subj", f"/CN={name}",
            "-out", f"{name}.crt", cwd=d)  # fmt: skip


def make_cert(d: Path, name: str, ca: str, san: str) -> None:
    """A certificate ``name.crt`` / ``name.key`` signed by ``ca`` with subjectAltName ``san``."""
    openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{name}.key", cwd=d)
    openssl("req", "-new", "-key", f"{name}.key", "-subj", f"/CN={name}", "-out", f"{name}.csr", cwd=d)
    (d / f"{name}.ext").write_text(f"subjectAltName={san}\n")
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.crt", cwd=d)  # fmt: skip


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
