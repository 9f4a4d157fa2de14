"""A real ext4 filesystem (loop device, ``errors=remount-ro``) that a test can make fail like an SD card.

``fail()`` raises an ext4 error through ``/sys/fs/ext4/<dev>/trigger_fs_error``: the kernel aborts
the journal and remounts the filesystem read-only, exactly what it does when the card's writes fail.
Such a filesystem cannot be made writable in place (the journal is aborted): ``repair()`` does what
the device's owner would, detaching it, checking it with ``e2fsck`` and mounting it again at the same
place; processes that kept files open there must open them again. Needs root and loop devices.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path


def available() -> str | None:
    """Why such a filesystem cannot be made here (None: it can)."""
    if os.geteuid() != 0:
        return "needs root (mount, losetup)"
    for tool in ("losetup", "mkfs.ext4", "e2fsck", "mount", "umount"):
        if shutil.which(tool) is None:
            return f"{tool} missing"
    if not Path("/dev/loop-control").exists():
        return "no loop devices"
    return None


def _run(*cmd: str) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if done.returncode not in (0, 1) or (done.returncode == 1 and cmd[0] != "e2fsck"):
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout.strip()


class FailingDisk:
    """An ext4 image mounted at ``mountpoint``; ``fail()`` turns it read-only, ``repair()`` back."""

    def __init__(self, workdir: Path, size_mb: int = 64) -> None:
        self.image = workdir / "disk.img"
        self.mountpoint = workdir / "disk"
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        with self.image.open("wb") as fh:
            fh.truncate(size_mb * 1024 * 1024)
        _run("mkfs.ext4", "-q", "-F", str(self.image))
        self.loop = ""
        self._mount()

    def _mount(self) -> None:
        self.loop = _run("losetup", "-f", "--show", str(self.image))
        _run("mount", "-o", "errors=remount-ro,commit=1", self.loop, str(self.mountpoint))

    @property
    def read_only(self) -> bool:
        """Whether the kernel has the filesystem read-only now."""
        for line in Path("/proc/mounts").read_text().splitlines():
            dev, where, _kind, options, *_ = line.split()
            if where == str(self.mountpoint) and dev == self.loop:
                flags = options.split(",")
                return "ro" in flags or "emergency_ro" in flags  # 6.x kernels: emergency_ro
        return False

    def fail(self) -> None:
        """An ext4 error: the kernel aborts the journal and remounts the filesystem read-only."""
        name = Path(self.loop).name
        Path(f"/sys/fs/ext4/{name}/trigger_fs_error").write_text("robot-face test: a failing card\n")

    def repair(self, while_unmounted: Callable[[], None] | None = None) -> None:
        """Detach the failed filesystem, check it and mount it again at the same place
        (``while_unmounted`` runs while the mount point shows what lies beneath)."""
        _run("umount", "-l", str(self.mountpoint))
        if while_unmounted is not None:
            while_unmounted()
        _run("losetup", "-d", self.loop)
        _run("e2fsck", "-fy", str(self.image))
        self._mount()

    def close(self) -> None:
        """Unmount and detach (lazily: a daemon may still hold files)."""
        subprocess.run(["umount", "-l", str(self.mountpoint)], capture_output=True, timeout=30)
        if self.loop:
            subprocess.run(["losetup", "-d", self.loop], capture_output=True, timeout=30)
