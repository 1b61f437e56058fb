"""Builds the pipeline and the retriever from settings: the embedded default or the service stores.

``SIMPLEMEM_MODE=embedded``: SQLite files under the store folder (FTS5 text, exact per-tenant vectors),
an in-process buffer. ``SIMPLEMEM_MODE=services``: OpenSearch, a Milvus server and Redis at their configured
endpoints. The processors are the same in both.
"""

from __future__ import annotations

import gc
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING

from simplemem.processors.blas import cap_blas_threads
from simplemem.processors.ingest.embedding import Embedder, MiniLMEmbedder
from simplemem.processors.retrieval.buffer import InMemoryBuffer, RecentTurnBuffer, RedisBuffer
from simplemem.processors.retrieval.config import RetrievalConfig
from simplemem.processors.retrieval.fanout import FanOut
from simplemem.processors.retrieval.names import TenantNames
from simplemem.processors.retrieval.retriever import Retriever
from simplemem.processors.stores.activity import ACTIVITY_FILE, ActivityLedger, RedisActivity, SqliteActivity
from simplemem.processors.stores.file_format import StoreFormatError, check_format
from simplemem.processors.stores.private import private_dir
from simplemem.processors.stores.protocols import LexicalStore, VectorStore
from simplemem.processors.stores.retry import connect
from simplemem.processors.stores.sqlite_lexical import FORMAT_VERSION as LEXICAL_FORMAT
from simplemem.processors.stores.sqlite_lexical import SqliteLexicalStore
from simplemem.processors.stores.sqlite_vectors import FORMAT_VERSION as VECTOR_FORMAT
from simplemem.processors.stores.sqlite_vectors import SqliteVectorStore
from simplemem.processors.stores.tombstones import (
    TOMBSTONE_FILE,
    RedisTombstones,
    SqliteTombstones,
    Tombstones,
)
from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import DeletionRequest

if TYPE_CHECKING:  # the ingestion side (spaCy, Presidio, torch) is imported by the first use only
    from simplemem.processors.ingest.analysis import AsyncPreparer, MessageAnalyzer, NlpPreparer
    from simplemem.processors.ingest.pipeline import Decomposer, Pipeline
    from simplemem.processors.lifecycle.consolidate import ConsolidationRun, Summariser
    from simplemem.processors.lifecycle.forget import ForgetResult, Stores
    from simplemem.processors.lifecycle.updates import UpdateJudge

LEXICAL_FILE = "lexical.sqlite"  # an embedded store's SQLite file: a folder without one holds no store
VECTOR_FILE = "vectors.sqlite"
OLD_VECTOR_FILE = "vectors.db"  # the Milvus Lite file of embedded stores written before VECTOR_FILE: refused

log = logging.getLogger(__name__)


@dataclass
class Runtime:
    """Lazily built components: a query process never imports, let alone loads, spaCy, Presidio or torch."""

    settings: Settings
    store_dir: Path
    # A batch run (``simplemem ingest``): with ``ingest_parallel`` and more than one core, spaCy and
    # Presidio in a child process and MiniLM's batches on every core (:attr:`parallel`).
    bulk: bool = False

    @cached_property
    def embedder(self) -> Embedder:
        s = self.settings
        if s.embedding_backend == "onnx-int8":
            from simplemem.processors.ingest.onnx_embedding import OnnxMiniLMEmbedder

            return OnnxMiniLMEmbedder(
                s.embedding_model_dir,
                s.model_cache_dir,
                batch_size=s.embedding_batch_size,
                batch_tokens=s.embedding_batch_tokens,
                threads=s.embedding_threads,
                runners=(os.cpu_count() or 1) if self.parallel else 1,
            )
        return MiniLMEmbedder(
            s.embedding_model_dir,
            batch_size=s.embedding_batch_size,
            threads=s.embedding_threads,
            dtype=s.embedding_dtype,
        )

    @cached_property
    def lexical(self) -> LexicalStore:
        s = self.settings
        if s.mode == "services":
            from simplemem.processors.stores.opensearch_lexical import OpenSearchLexicalStore

            return connect(
                lambda: OpenSearchLexicalStore(
                    s.opensearch_endpoint,
                    s.opensearch_index,
                    refresh_interval=s.opensearch_refresh_interval,
                    pool_connections=s.opensearch_pool_connections,
                ),
                s.store_connect_seconds,
            )
        return SqliteLexicalStore(self.store_dir / LEXICAL_FILE)

    @cached_property
    def vectors(self) -> VectorStore:
        from simplemem.processors.ingest.embedding import model_dimension

        s = self.settings
        dim = model_dimension(s.embedding_model_dir)
        if s.mode == "services" or s.milvus_uri:
            from simplemem.processors.stores.milvus_vectors import MilvusVectorStore

            def store() -> MilvusVectorStore:
                return MilvusVectorStore(
                    s.milvus_server_uri,  # SIMPLEMEM_MILVUS_URI when set
                    s.milvus_collection,
                    dim,
                    index_type=s.milvus_index_type,
                    flush_seconds=s.store_flush_seconds,
                    partitions=s.milvus_partitions,
                )

            return connect(store, s.store_connect_seconds) if s.mode == "services" else store()
        return embedded_vectors(self.store_dir, dim)

    @cached_property
    def buffer(self) -> RecentTurnBuffer:
        s = self.settings
        if s.mode == "services":
            return RedisBuffer(
                s.redis_endpoint, s.buffer_turns, s.buffer_ttl_seconds, prefix=s.redis_key_prefix
            )
        return InMemoryBuffer(s.buffer_turns, s.buffer_ttl_seconds, s.buffer_max_sessions)

    @cached_property
    def tombstones(self) -> Tombstones:
        """The forgotten messages and the deletion records: in the store folder (embedded), Redis
        (services: every worker, query process and CLI of the deployment sees the same set)."""
        s = self.settings
        if s.mode == "services":
            return RedisTombstones(s.redis_endpoint, s.redis_key_prefix)
        return SqliteTombstones(self.store_dir / TOMBSTONE_FILE)

    @cached_property
    def activity(self) -> ActivityLedger:
        """Per-tenant ingestion accounting: in the store folder (embedded), Redis (services: the
        workers count, every query process reads the same numbers)."""
        s = self.settings
        if s.mode == "services":
            return RedisActivity(s.redis_endpoint, s.redis_key_prefix)
        return SqliteActivity(self.store_dir / ACTIVITY_FILE)

    def forget(self, request: DeletionRequest) -> ForgetResult:
        """Carry out a deletion on this runtime's stores (:func:`simplemem.processors.lifecycle.forget.forget`)."""
        from simplemem.processors.lifecycle.consolidate import reabstract_for
        from simplemem.processors.lifecycle.forget import forget

        return forget(
            request, self._stores, self.tombstones, self.settings, reabstract=reabstract_for(self.settings)
        )

    def consolidate(self, tenant_id: str, *, apply: bool = True) -> ConsolidationRun:
        """Stage 2 for one tenant: clusters into abstracts, then the knowledge-update rule.
        ``apply=False``: the abstracts are planned only (:meth:`apply_consolidation` writes them);
        the update rule's pointers are written either way (it is idempotent and lists every unit
        it changed)."""
        from simplemem.processors.lifecycle.consolidate import consolidate_tenant
        from simplemem.processors.lifecycle.updates import update_tenant

        s = self.settings
        run = consolidate_tenant(tenant_id, self._stores, s, summariser=self.summariser, apply=apply)
        updates = update_tenant(tenant_id, self.lexical, s.consolidation_batch_units, self.update_judge)
        run.updated, run.update_fallbacks = updates.changed, updates.fallbacks
        if apply:  # a plan wrote no vector: apply_consolidation seals its writes
            self.vectors.flush()
        return run

    def apply_consolidation(self, tenant_id: str, run: ConsolidationRun) -> None:
        from simplemem.processors.lifecycle.consolidate import apply_run

        apply_run(tenant_id, run, self._stores, self.settings)
        self.vectors.flush()

    @property
    def _stores(self) -> Stores:
        from simplemem.processors.lifecycle.forget import Stores

        return Stores(self.lexical, self.vectors, self.buffer)

    @cached_property
    def summariser(self) -> Summariser:
        """``SIMPLEMEM_SUMMARISER``: how consolidation words an abstract (offline by default)."""
        if self.settings.summariser == "llm":
            from simplemem.processors.lifecycle.llm_summary import LlmSummariser

            return LlmSummariser(self.settings)
        from simplemem.processors.lifecycle.consolidate import offline_summariser

        return offline_summariser

    @cached_property
    def update_judge(self) -> UpdateJudge | None:
        """``SIMPLEMEM_UPDATE_JUDGE=llm``: the model judges the update rule's candidate pairs."""
        if self.settings.update_judge == "llm":
            from simplemem.processors.lifecycle.llm_updates import LlmUpdateJudge

            return LlmUpdateJudge(self.settings)
        return None

    @cached_property
    def decomposer(self) -> Decomposer:
        if self.settings.decomposer == "llm":
            from simplemem.processors.ingest.llm_decompose import LlmDecomposer

            return LlmDecomposer(self.settings)
        from simplemem.processors.ingest.decompose import OfflineDecomposer

        return OfflineDecomposer()

    @property
    def parallel(self) -> bool:
        """Whether this run spreads ingestion over processes and cores (a batch run on a machine that
        has more than one, unless ``ingest_parallel`` is off)."""
        return self.bulk and self.settings.ingest_parallel and (os.cpu_count() or 1) > 1

    @cached_property
    def nlp_preparer(self) -> NlpPreparer:
        return build_nlp_preparer(self.settings)

    @cached_property
    def preparer(self) -> AsyncPreparer:
        if self.parallel:
            from simplemem.processors.ingest.nlp_process import ProcessPreparer

            return ProcessPreparer(partial(build_nlp_preparer, self.settings))
        from simplemem.processors.ingest.analysis import ThreadPreparer

        return ThreadPreparer(self.nlp_preparer)

    @cached_property
    def analyzer(self) -> MessageAnalyzer:
        from simplemem.processors.ingest.analysis import MessageAnalyzer

        return MessageAnalyzer(self.preparer, self.embedder, self.settings.assistant_vector_chars)

    @cached_property
    def pipeline(self) -> Pipeline:
        from simplemem.processors.ingest.pipeline import Indexer, Pipeline

        indexer = Indexer(self.embedder, self.lexical, self.vectors)
        return Pipeline(
            self.settings,
            self.analyzer,
            self.decomposer,
            indexer,
            buffer=self.buffer,
            tombstones=self.tombstones,
            activity=self.activity,
        )

    @cached_property
    def retriever(self) -> Retriever:
        # Services: the names are a round trip to OpenSearch per query, worth keeping a few seconds.
        # Embedded: a local SQLite lookup, and the process that writes the memories also reads them.
        s = self.settings
        cap_blas_threads(s.blas_threads)  # a query's vector products are small too
        names = TenantNames(self.lexical, s) if s.mode == "services" and s.names_cache_seconds > 0 else None
        fan_out = FanOut(s.query_store_threads if s.mode == "services" else 1)
        config = RetrievalConfig.from_settings(s)
        # embedded: the question embedded on a thread of its own while the words are searched (ONNX
        # Runtime computes without the interpreter's lock), where there is a core for it
        ahead = (
            ThreadPoolExecutor(1, thread_name_prefix="simplemem-embed")
            if s.query_embed_ahead and s.mode != "services" and (os.cpu_count() or 1) > 1
            else None
        )
        return Retriever(
            config, self.lexical, self.vectors, self.embedder, self.buffer, names, fan_out, embed_pool=ahead
        )

    def close(self) -> None:
        if "retriever" in self.__dict__:
            self.retriever.fan_out.close()
            if self.retriever.embed_pool is not None:
                self.retriever.embed_pool.shutdown(wait=True)
        for name in ("preparer", "vectors", "lexical", "buffer", "tombstones", "activity"):
            if name in self.__dict__:
                self.__dict__[name].close()


def build_nlp_preparer(s: Settings) -> NlpPreparer:
    """spaCy, Presidio and the preparer over them (module level: a child process builds its own)."""
    from simplemem.processors.ingest.analysis import NlpPreparer
    from simplemem.processors.language.nlp import load_pipeline
    from simplemem.processors.pii.scrubber import PiiScrubber

    nlp = load_pipeline(s.spacy_model, s.blas_threads)
    scrubber = PiiScrubber(nlp, s.pii_entities, s.pii_score_threshold)
    return NlpPreparer(nlp, scrubber, long_answer_chars=s.assistant_vector_chars)


def freeze_heap() -> None:
    """Leave the objects alive now (models, modules, clients: hundreds of thousands once a process
    is warm) out of every later garbage collection. A query allocates thousands of short-lived
    objects, and each collection of the oldest generation would walk them all, a cost on every
    query. Called once a process has loaded what it keeps."""
    gc.collect()
    gc.freeze()


BULK_GC_THRESHOLD = 20_000  # objects allocated between young-generation collections (Python's: 700)


def bulk_heap() -> None:
    """For a batch run once its models are loaded: the heap frozen as :func:`freeze_heap` does, and
    the young generation collected after tens of thousands of allocations instead of hundreds. An
    ingestion allocates millions of short-lived objects (tokens, sentences, units) on three threads,
    and every collection holds the interpreter lock for all of them, while nearly all of it is freed
    by reference counting before a collection would find it."""
    freeze_heap()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(BULK_GC_THRESHOLD, older, oldest)


def embedded_vectors(store_dir: Path, dim: int) -> SqliteVectorStore:
    """The store folder's vector file."""
    check_store_format(store_dir)
    return SqliteVectorStore(private_dir(store_dir) / VECTOR_FILE, dim)


def check_store_format(store_dir: Path) -> None:
    """Refuse (:class:`StoreFormatError`) an embedded store whose files are in another format than
    this code's, or that still holds the Milvus Lite vector file of the stores written before
    ``vectors.sqlite``; reads no more than the files' headers."""
    old = store_dir / OLD_VECTOR_FILE
    if old.exists():
        raise StoreFormatError(old, None, VECTOR_FORMAT)
    check_format(store_dir / LEXICAL_FILE, LEXICAL_FORMAT)
    check_format(store_dir / VECTOR_FILE, VECTOR_FORMAT)


def store_exists(store: Path) -> bool:
    """Whether ``store`` holds an embedded store (what a first ingestion writes)."""
    return (store / LEXICAL_FILE).is_file()


def open_runtime(settings: Settings, store: Path | None = None, *, bulk: bool = False) -> Runtime:
    return Runtime(settings, Path(store or settings.store), bulk)
