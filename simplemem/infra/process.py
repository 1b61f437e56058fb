"""Process supervision with psutil: which recorded process is still ours, and stopping a whole group.

A pid alone is no identity: the kernel hands the number of a process that exited to the next one, and
a launcher that trusted its pid file could take an unrelated process for its service, or signal it. So a
pid file records when the process started too (clock ticks after boot, which a step of the wall clock
does not move; its creation time where there are no ticks), and a pid counts as ours only while both
match.

Every service is started as the leader of its own process group (``start_new_session``), so that the
group holds exactly what the service started (Milvus's launcher and the C++ server it runs, for one)
and stopping the service means stopping the group, not just its leader.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import IO

import psutil

log = logging.getLogger("simplemem.infra.process")

# psutil's creation time is clock ticks since boot plus the boot time in wall-clock seconds, which the
# clock's corrections move, so two readings of one process may differ slightly. A different process
# that reuses the pid within a second of the original's creation is no practical concern.
SAME_PROCESS_SECONDS = 1.0

# Popen objects of the processes this interpreter started. Polling one reaps it when it has exited, so
# a `down` in the same process as its `up` (a test session) leaves no zombie that still holds its pid.
_children: dict[int, subprocess.Popen[bytes]] = {}


def spawn(argv: list[str], cwd: Path, env: dict[str, str] | None, output: IO[bytes]) -> int:
    """Starts a detached process group (stdin closed, stdout and stderr to `output`); its pid."""
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    _children[proc.pid] = proc
    return proc.pid


def _reap(pid: int) -> None:
    child = _children.get(pid)
    if child is not None and child.poll() is not None:
        del _children[pid]


def create_time(pid: int) -> float | None:
    """When the process was created (seconds since the epoch), or None when there is no such process."""
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def start_ticks(pid: int) -> int | None:
    """When the process started, in clock ticks after boot (Linux ``/proc/<pid>/stat``, field 22):
    unlike a creation time in wall-clock seconds, a step of the clock (a VM resumed, NTP) leaves it
    alone. None where there is no ``/proc`` or no such process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def is_alive(pid: int, created: float | None = None, ticks: int | None = None) -> bool:
    """Whether `pid` runs (a zombie does not) and is the process started then: by its start in clock
    ticks when given and readable, else by its creation time when given."""
    _reap(pid)
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:  # exited, only not reaped yet by its parent
            return False
        now_ticks = start_ticks(pid) if ticks is not None else None
        if now_ticks is not None:
            return now_ticks == ticks
        return created is None or abs(proc.create_time() - created) < SAME_PROCESS_SECONDS
    except psutil.Error:  # NoSuchProcess, AccessDenied
        return False


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of a process group."""
    members = []
    for proc in psutil.process_iter(["status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        with contextlib.suppress(OSError):  # it exited meanwhile
            if os.getpgid(proc.pid) == pgid:
                members.append(proc.pid)
    return members


def wait_group_gone(pgid: int, timeout: float) -> bool:
    """Waits until no process of the group is left; False when some still are after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        _reap(pgid)
        if not group_members(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def terminate_group(pgid: int, grace: float) -> list[int]:
    """SIGTERM the group's leader, then SIGKILL the whole group after `grace` s; the survivors' pids.

    Only the leader gets SIGTERM: a service shuts its own children down in order (Milvus's launcher
    stops the server it started), which signalling all of them at once would race.
    """
    with contextlib.suppress(ProcessLookupError):
        os.kill(pgid, signal.SIGTERM)
    if wait_group_gone(pgid, grace):
        return []
    log.warning("process group %d: still running %.0f s after SIGTERM, sending SIGKILL", pgid, grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    wait_group_gone(pgid, 10.0)
    return group_members(pgid)
