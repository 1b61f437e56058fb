"""Runs the Milvus standalone server of the PyPI package ``milvus`` in the foreground, on loopback.

Started by simplemem/infra/milvus_service.py as a detached child process, with the Python that has ``milvus`` installed
(the project's venv, or its own venv when installing it there would change a package version). It imports
nothing from this repository. ``default_server`` starts the C++ server as its own child; SIGTERM or
SIGINT stops that child gracefully (SIGKILL only after --stop-grace seconds), then this process exits.

    python simplemem/infra/milvus/server.py --data-dir DIR --port 19530
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

# The Milvus components that advertise an address (sections of its config with an `ip:` key): without
# `ip` each one picks the machine's first network address, and the others would then dial that instead of
# loopback. The config template is scanned too, so a component this list misses is pinned all the same.
COMPONENTS = ("rootCoord", "proxy", "queryCoord", "queryNode", "indexNode", "dataCoord", "dataNode")
HOST = "127.0.0.1"
# Milvus's garbage collector, for a server that runs minutes at a time (a test run, a bench): with its
# defaults (a pass every hour, a dropped collection's files kept 3 h) no pass ever came, and the files
# of the collections the tests and benches drop piled up in the data folder.
GARBAGE_COLLECTION = {"dataCoord.gc.interval": 60, "dataCoord.gc.dropTolerance": 60}
# The folders of its local object store (``localStorage.path``) that the collector lists at every pass.
# On local storage it deletes files but leaves their folders: a dropped collection's index builds stayed
# as empty trees, each one "removed" again at every pass, and the empty segment folders slowed every
# listing: after a few test runs a pass took seconds of a full core.
OBJECT_FOLDERS = ("insert_log", "delta_log", "stats_log", "index_files")
# The empty trees are removed before the server starts, never while it runs: its collector walks these
# folders, and a folder removed under that walk crashes the server (a nil pointer in
# ``LocalChunkManager.ListWithPrefix``: Go's walk hands it no file info for an entry that vanished).


def components_with_ip(template_text: str) -> list[str]:
    found: list[str] = list(COMPONENTS)
    section = ""
    for line in template_text.splitlines():
        if line and not line.startswith((" ", "#")) and ":" in line:
            section = line.split(":", 1)[0].strip()
        elif line.startswith("  ip:") and section and section not in found:
            found.append(section)
    return found


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", required=True, help="Milvus data, config, logs and unpacked binaries")
    parser.add_argument("--port", type=int, default=19530, help="the gRPC/HTTP port clients use")
    parser.add_argument("--metrics-port", type=int, default=9091, help="its /healthz and /metrics port")
    parser.add_argument(
        "--avoid-ports",
        default="",
        help="comma-separated ports of other services: never given to a component",
    )
    parser.add_argument("--stop-grace", type=float, default=20.0)
    return parser.parse_args()


def _port_binder(avoid: set[int]) -> Callable[[int], socket.socket | None]:
    """Milvus gives each internal component (and its metrics server) the first port that binds, counting
    up from the component's default. Two fixes to how the package tests a port: SO_REUSEADDR, as the
    server's own listeners have (otherwise a port left in TIME_WAIT by the previous run's health checks
    looks taken, and 9091 moves to Kafka's 9092), and the other services' ports (``avoid``) are never
    handed out."""

    def try_bind_port(port: int) -> socket.socket | None:
        if port in avoid:
            return None
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
            sock.listen()
        except OSError:
            sock.close()
            return None
        return sock

    return try_bind_port


def _configure(server: Any, args: argparse.Namespace) -> None:
    """Bind the server to loopback on the asked ports, with the garbage collection this project needs,
    and prune every empty tree of its local storage (the server is not running yet)."""
    try_bind_port = _port_binder({int(p) for p in args.avoid_ports.split(",") if p.strip()})
    server.config.try_bind_port = try_bind_port
    server.webservice_port = args.metrics_port
    # `update` (not `set`): a port in the explicit configs must bind or the start fails, instead of
    # silently moving to the next free port.
    server.config.update(data_dir=args.data_dir, proxy_port=args.port)
    for component in components_with_ip(server.config.template_text):
        server.config.set(f"{component}.ip", HOST)
    for key, value in GARBAGE_COLLECTION.items():
        server.config.set(key, value)
    pin_embedded_etcd(server.config, args.data_dir, try_bind_port)
    server.config.resolve_storage()  # sets local_storage_dir (start() does it again)
    storage = Path(server.config.get("local_storage_dir"))
    pruned = prune_empty_trees(storage, min_age=0.0)
    if pruned:
        print(f"milvus server: removed {pruned} empty folders of its local storage", flush=True)


def main() -> int:
    args = _arguments()
    from milvus import default_server  # the PyPI package `milvus`, not pymilvus

    server = default_server
    _configure(server, args)
    stopping = False

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    try:
        server.start()  # returns once its /healthz answers OK
    except Exception as exc:  # its own errors are RuntimeError/TimeoutError; anything else also ends the run
        print(f"milvus server failed to start: {exc!r}", file=sys.stderr, flush=True)
        _stop(server, args.stop_grace)
        return 1
    proc = server.server_proc
    print(
        f"milvus server pid {proc.pid if proc else '?'} serving {HOST}:{args.port}, "
        f"its own logs in {args.data_dir}/logs",
        flush=True,
    )
    while not stopping and proc is not None and proc.poll() is None:
        time.sleep(0.2)
    code = proc.returncode if proc is not None and proc.returncode is not None else 0
    if stopping:
        print("milvus server: stopping", flush=True)
        _stop(server, args.stop_grace)
        code = 0
    else:
        print(f"milvus server exited by itself with code {code}", file=sys.stderr, flush=True)
    return code


def prune_empty_trees(storage: Path, min_age: float, now: float | None = None) -> int:
    """Remove the folders under ``storage``'s object folders that hold no file anywhere below them and
    had not changed for ``min_age`` seconds before this call (all are judged first: removing a child
    touches its parent). A folder that gains an entry meanwhile stays: ``rmdir`` takes only an empty
    one. Returns how many folders were removed."""
    cutoff = (time.time() if now is None else now) - min_age
    removed = 0
    for name in OBJECT_FOLDERS:
        top = str(storage / name)
        empty: dict[str, bool] = {}
        unused: list[str] = []
        for folder, children, files in os.walk(top, topdown=False):  # children before their parent
            empty[folder] = not files and all(empty.get(os.path.join(folder, c), False) for c in children)
            if folder != top and empty[folder] and _unchanged_since(folder, cutoff):
                unused.append(folder)
        for folder in unused:
            try:
                os.rmdir(folder)
            except OSError:  # gone already, or no longer empty
                continue
            removed += 1
    return removed


def _unchanged_since(folder: str, cutoff: float) -> bool:
    try:
        return os.stat(folder).st_mtime <= cutoff
    except OSError:
        return False


def _free_port(start: int, try_bind_port: Callable[[int], socket.socket | None], taken: set[int]) -> int:
    """The first port from ``start`` up that binds and is not in ``taken``."""
    for port in range(start, start + 1000):
        sock = None if port in taken else try_bind_port(port)
        if sock is not None:
            sock.close()
            return port
    raise RuntimeError(f"no free port from {start}")


def pin_embedded_etcd(
    config: Any, data_dir: str, try_bind_port: Callable[[int], socket.socket | None]
) -> None:
    """Give the embedded etcd free client and peer ports, so a second Milvus can run on this host.

    Without an etcd config file Milvus starts its embedded etcd with etcd's defaults (client 2379,
    peer 2380) whatever ``etcd.endpoints`` says, and a second server fails with "bind: address already
    in use". The file is passed as ``ETCD_CONFIG_PATH`` (Milvus reads ``etcd.config.path`` from the
    environment; the package's template has no such key). Ports are the defaults when those are free.
    """
    client = _free_port(2379, try_bind_port, set())
    peer = _free_port(2380, try_bind_port, {client})
    config.update(etcd_port=client)
    path = Path(data_dir).resolve() / "configs" / "embedEtcd.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "name: default\n"
        f"listen-client-urls: http://{HOST}:{client}\n"
        f"advertise-client-urls: http://{HOST}:{client}\n"
        f"listen-peer-urls: http://{HOST}:{peer}\n"
        f"initial-advertise-peer-urls: http://{HOST}:{peer}\n"
        f"initial-cluster: default=http://{HOST}:{peer}\n"
    )
    os.environ["ETCD_CONFIG_PATH"] = str(path)


def _stop(server: object, grace: float) -> None:
    proc: subprocess.Popen[bytes] | None = getattr(server, "server_proc", None)
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    # Closes its log files; the process is already gone, so its own 1 s terminate-then-kill is a no-op.
    stop = getattr(server, "stop", None)
    if callable(stop):
        stop()


if __name__ == "__main__":
    sys.exit(main())
