"""Throw-away certificates for TLS tests, made with the openssl CLI."""

from __future__ import annotations

import subprocess
from pathlib import Path


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
