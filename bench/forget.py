"""Time from a deletion request to "gone from every store", embedded and services mode.

    python -m bench.forget [--limit N]        # services mode needs the services: simplemem infra up

Each mode ingests N LoCoMo conversations (the backdrop: a store of realistic size) and the forget
conversation (tests/helpers/forget_data.py); then forgets one message, then the five coffee orders and the
question quoted by an answer, then a whole LoCoMo tenant. Each row: the request's time to its
completion (every store written, deleted bytes expunged: the FTS index merged and the WAL truncated,
OpenSearch's deleted documents expunged, Milvus compacted), the memories deleted and rewritten, and
whether a byte scan (embedded: every file of the store; services: every OpenSearch document and
Redis value) still finds any marker word of the forgotten messages.
"""

from __future__ import annotations

import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import conversations, event_lines, parser
from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import DeletionRequest
from tests.helpers.forget_data import (
    COFFEE,
    FESTIVAL,
    QUESTION_ID,
    coffee_ids,
    conversation,
    files_holding,
    lines,
    stored_bytes,
)

TENANT = "bench-forget"


def _left(rt: Any, store: Path) -> list[str]:
    words = (*COFFEE, *FESTIVAL)
    if rt.settings.mode == "embedded":
        return files_holding(store, words)
    stored = stored_bytes(rt)
    return [w for w in words if w.lower().encode() in stored]


def run_mode(settings: Settings, backdrop: list[tuple[str, bytes]], locomo_tenant: str) -> None:
    from simplemem.runtime import open_runtime

    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp)
        rt = open_runtime(settings, store)
        try:
            rt.pipeline.ingest([*backdrop, *lines(conversation(TENANT))])
            units = rt.lexical.count(locomo_tenant)
            cases = [
                ("one message", TENANT, [coffee_ids()[0]]),
                ("6 messages (coffee orders, a quoted question)", TENANT, [*coffee_ids()[1:], QUESTION_ID]),
                (f"whole tenant ({units} memories)", locomo_tenant, None),
            ]
            for name, tenant, ids in cases:
                request = DeletionRequest(
                    tenant_id=tenant,
                    message_ids=ids or [],
                    whole_tenant=ids is None,
                    requested_by="bench",
                    requested_at=datetime.now(UTC),
                )
                record = rt.forget(request).record
                print(
                    f"  {settings.mode:9s} {name:48s} {record.seconds * 1000:8.0f} ms   "
                    f"deleted {record.units_deleted:5d}  rewritten {record.units_rewritten:3d}"
                )
            print(f"  {settings.mode:9s} marker words left after all: {_left(rt, store) or 'none'}")
        finally:
            rt.close()
            if settings.mode == "services":
                from tests.helpers.cleanup import drop_namespace

                drop_namespace(settings)


def main() -> None:
    ap = parser(__doc__, 1)
    ap.add_argument("--modes", default="embedded,services")
    args = ap.parse_args()
    convs = conversations(args)
    backdrop = event_lines(convs)
    suffix = uuid.uuid4().hex[:8]
    modes = {
        "embedded": Settings(),
        "services": Settings(
            mode="services",
            opensearch_index=f"simplemem-bench-forget-{suffix}",
            milvus_collection=f"simplemem_bench_forget_{suffix}",
            milvus_index_type="HNSW",
            redis_key_prefix=f"simplemem-bench-forget-{suffix}",
        ),
    }
    print(f"request -> gone from every store ({len(convs)} LoCoMo conversations as backdrop)")
    for mode in args.modes.split(","):
        run_mode(modes[mode], backdrop, convs[0].tenant_id)


if __name__ == "__main__":
    main()
