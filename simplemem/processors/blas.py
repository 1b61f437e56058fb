"""How many threads OpenBLAS may run, set once per process: by the ingestion under spaCy's layers and
by a query process under its vector products (a module of its own: a query process imports no spaCy)."""

from __future__ import annotations


def cap_blas_threads(threads: int) -> None:
    """Cap OpenBLAS at ``threads`` for the whole process (0: the library's default). Its matrices
    here are small (spaCy's layers, a tenant's vectors times one question's): a second thread only
    waits for the first, and on a busy machine the wait was ten times the work."""
    if threads:
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads, user_api="blas")
