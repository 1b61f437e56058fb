"""Duplicate memories in a kept fault run's stores, audited again after the run itself stopped.

    python -m bench.fault_stores faults-<run>

bench.faults audits its stores once the stream is drained; when that process ends early (a service
restarted under it, Ctrl-C), the run's units topic, index and collection are still there (it drops them
only after its report). This reads them with the same checks (bench/fault_audit.py): rows, distinct
ids and contents of the units topic, OpenSearch and Milvus, and the memories stored twice.
"""

from __future__ import annotations

import argparse
import asyncio

from bench import fault_audit as audit
from bench.stream import bench_env
from simplemem.schemas.settings import settings_for


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", help="the run's tag, as bench.faults printed it (faults-xxxxxx)")
    args = ap.parse_args()
    from simplemem.streams.kafka_io import read_topic

    s = settings_for(bench_env(args.run))
    units = audit.units_on_topic((m.key, m.value) for m in asyncio.run(read_topic(s, s.topic(s.units_topic))))
    tenants = {tenant for tenant, _ in units.values()}
    stores = {
        "units topic": audit.topic_duplicates(units),
        "opensearch": audit.opensearch_rows(s, units),
        "milvus": audit.milvus_rows(s, units, tenants),
    }
    print(f"run {args.run}: {len(tenants)} tenants")
    for name, rows in stores.items():
        print(
            f"{name:<12} rows {rows.rows} / ids {rows.distinct_ids} / contents {rows.distinct_contents}"
            f" / missing {rows.missing} / unlisted {rows.unlisted}: DUPLICATES {rows.duplicates}"
        )
    raise SystemExit(1 if any(r.duplicates for r in stores.values()) else 0)


if __name__ == "__main__":
    main()
