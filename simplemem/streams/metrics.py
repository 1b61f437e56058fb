"""Prometheus metrics of a worker, served on its ``/metrics`` page (one registry per process).

Names are what ``simplemem/infra/prometheus/alerts.yml`` queries; a test checks that every metric the alerts
use is defined here.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

STAGE_SECONDS = Histogram(
    "simplemem_stage_seconds",
    "Time a stage spends on one batch",
    ["stage"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
STAGE_RECORDS = Counter("simplemem_stage_records_total", "Records a stage took in", ["stage"])
TURNS_IN = Counter("simplemem_turns_in_total", "Turns read from the turns topic")
TURNS_OUT = Counter("simplemem_turns_out_total", "Turns decided, by outcome", ["outcome"])
TURNS_WINDOWED = Counter(
    "simplemem_turns_windowed_total",
    "Turns analysed, in the recent-turn buffer and in their session's window",
)
TURNS_FORGOTTEN = Counter(
    "simplemem_turns_forgotten_total", "Turns dropped because they were forgotten (replays, in-flight)"
)
FORGET_SECONDS = Histogram(
    "simplemem_forget_seconds", "From a deletion request to gone from every store (request time to done)"
)
ABSTRACTS = Counter("simplemem_abstracts_total", "Abstract memories made by consolidation")
LLM_FALLBACKS = Counter(
    "simplemem_llm_fallbacks_total", "LLM answers replaced by the offline rule, by step", ["step"]
)
DUPLICATES = Counter("simplemem_replayed_turns_skipped_total", "Turns seen again after a restart, skipped")
WINDOWS = Counter("simplemem_windows_total", "Windows judged by the entropy filter", ["decision"])
DISCARD_RATE = Gauge("simplemem_discard_rate", "Share of decided turns filtered (since the worker started)")
UNITS = Counter("simplemem_units_total", "Memory units indexed", ["kind"])
DEAD_LETTERS = Counter(
    "simplemem_dead_letters_total", "Dead letters, by stage and reason class", ["stage", "code"]
)
CONSUMER_LAG = Gauge(
    "simplemem_consumer_lag",
    "Records behind the partition's end, from the group's committed offsets",
    ["topic", "partition"],
)
STORE_WRITE_SECONDS = Histogram(
    "simplemem_store_write_seconds",
    "Latency of one store write (vector + lexical index, buffer)",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
STORE_BLOCKED = Gauge(
    "simplemem_store_outage", "Store writes waiting for an unreachable store (0: none)", ["store"]
)
STORE_DRIFT_UNITS = Gauge(
    "simplemem_store_drift_units",
    "Units the lexical and the vector store disagree on (count difference summed over tenants; "
    "simplemem reconcile repairs it)",
)
STORE_DRIFT_TENANTS = Gauge("simplemem_store_drift_tenants", "Tenants whose two stores' unit counts differ")
SESSIONS = Gauge("simplemem_sessions", "Session states held by this worker (open, and closed within grace)")
SESSIONS_REMOVED = Counter("simplemem_sessions_removed_total", "Closed sessions' states removed")
REFETCHED = Gauge(
    "simplemem_refetched_records",
    "Records the consumer skipped and the gap guard re-read (simplemem/streams/gaps.py)",
)
RESYNCS = Counter(
    "simplemem_partition_rereads_total",
    "Partitions read again from their committed offset: records waited while their agent was idle",
)
