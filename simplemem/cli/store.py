"""The store a command works on: checked, and in embedded mode locked, before any model loads.

An embedded store serves one process at a time, readers included: its vector store keeps each
tenant's vectors in memory until that process writes them again, so another process's writes would go
unseen (and a Milvus Lite file, with ``SIMPLEMEM_MILVUS_URI``, fails to open in a second process). So
every command that opens an embedded store holds an
exclusive lock on ``<store>/.lock`` for its whole run, and a second one stops at once, saying who holds
it. A query never creates a store, unless lazy migration may have to import a tenant into it.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from simplemem.cli.console import quiet_libraries
from simplemem.cli.errors import CliError, ExitCode
from simplemem.processors.stores.private import PRIVATE_FILE_MODE, private_dir
from simplemem.schemas.keys import check_id

if TYPE_CHECKING:
    from simplemem.runtime import Runtime
    from simplemem.schemas.settings import Settings

LOCK_FILE = ".lock"
HOLDER_BYTES = 1024  # the holder's line is far shorter


@contextmanager
def store_lock(store: Path, holder: str) -> Iterator[None]:
    """Hold ``store``'s lock as ``holder`` (a command line), or raise :class:`CliError` naming the
    process that holds it. The lock goes with the process, however it ends."""
    fd = os.open(store / LOCK_FILE, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
    try:
        _acquire(fd, store)
        os.fchmod(fd, PRIVATE_FILE_MODE)  # a lock file an older version made 0644 (it names the holder)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} ({holder})".encode(), 0)
        yield
    finally:
        os.close(fd)


def check_not_busy(store: Path) -> None:
    """Raise :class:`CliError` if a process holds the lock of ``store`` (say, an ingest creating it);
    creates nothing."""
    try:
        fd = os.open(store / LOCK_FILE, os.O_RDONLY)
    except OSError:  # no lock file, or no such folder: nobody is at work there
        return
    try:
        _acquire(fd, store)
    finally:
        os.close(fd)


def _acquire(fd: int, store: Path) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        who = os.pread(fd, HOLDER_BYTES, 0).decode("utf-8", "replace").strip() or "another process"
        raise CliError(
            f"the store {store} is in use by {who}; an embedded store serves one process at a time",
            ExitCode.STORE_BUSY,
        ) from None


@contextmanager
def open_store(
    settings: Settings, store: Path | None, holder: str, *, create: bool, bulk: bool = False
) -> Iterator[Runtime]:
    """The runtime on ``store`` (default: the configured one), open and locked until the block ends;
    ``bulk`` for a batch run (:attr:`Runtime.parallel`)."""
    from simplemem.runtime import check_store_format, open_runtime, store_exists

    folder = Path(store or settings.store)
    with ExitStack() as stack:
        if settings.mode == "embedded":  # services: the stores are servers, shared by design
            may_create = create or settings.legacy_history_dir is not None
            if not may_create and not store_exists(folder):
                check_not_busy(folder)  # an ingest may be creating it
                raise CliError(f"no store at {folder} (`simplemem ingest` makes one; a query never does)")
            try:
                private_dir(folder)
                stack.enter_context(store_lock(folder, holder))
            except OSError as exc:
                raise CliError(f"cannot use {folder} as a store: {exc.strerror or exc}") from None
            check_store_format(folder)  # before any model loads
        quiet_libraries()
        rt = open_runtime(settings, folder, bulk=bulk)
        stack.callback(rt.close)
        yield rt


def checked_tenant(tenant: str | None) -> str | None:
    """A ``--tenant`` option's value, refused as a bad parameter when it is no tenant id."""
    if tenant is not None:
        try:
            check_id(tenant, tenant=True)
        except ValueError as exc:
            raise typer.BadParameter(f"--tenant: {exc}") from None
    return tenant


def tenants_of(rt: Runtime, tenant: str | None) -> list[str]:
    """The one tenant asked for, or every tenant of the store."""
    return [tenant] if tenant is not None else rt.lexical.tenants()
