"""Settings of the local service launchers (infra/services.py), read from ``SIMPLEMEM_*`` variables.

Every service listens on 127.0.0.1 only; the ports, the state folder (data, logs, pid files) and the
download cache are settings, e.g. ``SIMPLEMEM_KAFKA_PORT=19092`` or ``SIMPLEMEM_INFRA_DIR=/tmp/infra``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parents[1]

HOST = "127.0.0.1"  # not a setting: every service binds loopback only


class InfraSettings(BaseSettings):
    """Ports, folders and timeouts of the local services; each field is ``SIMPLEMEM_<FIELD>``."""

    model_config = SettingsConfigDict(env_prefix="SIMPLEMEM_", extra="ignore", frozen=True)

    # --- folders ----------------------------------------------------------------------------------
    infra_dir: Path = Field(
        REPO_ROOT / ".infra", description="per-service data, logs and pid files (<infra_dir>/<service>/...)"
    )
    infra_cache_dir: Path = Field(
        Path.home() / ".cache" / "simplemem" / "infra",
        description="downloaded jars and the Milvus venv; outside the repo, shared by clones",
    )

    # --- ports (all on 127.0.0.1) ---------------------------------------------------------------
    kafka_port: int = Field(9092, ge=1, le=65535)
    kafka_controller_port: int = Field(9093, ge=1, le=65535)
    opensearch_port: int = Field(9200, ge=1, le=65535)
    opensearch_transport_port: int = Field(9300, ge=1, le=65535)
    milvus_port: int = Field(19530, ge=1, le=65535)
    milvus_metrics_port: int = Field(
        9091, ge=1, le=65535, description="its /healthz; the next free port if taken (its components too)"
    )
    redis_port: int = Field(6379, ge=1, le=65535)

    # --- processes --------------------------------------------------------------------------------
    infra_ready_timeout: float = Field(120.0, gt=0, description="seconds `up` waits for each service")
    infra_stop_grace: float = Field(30.0, ge=0, description="seconds between SIGTERM and SIGKILL in `down`")
    kafka_heap: str = Field("-Xms256m -Xmx512m", description="JVM heap options of the Kafka broker")
    opensearch_heap: str = Field("-Xms512m -Xmx512m", description="JVM heap options of the OpenSearch node")
    milvus_version: str = "2.3.5"
    milvus_own_venv: bool = Field(
        False, description="always run Milvus from its own venv in the cache, never the project's"
    )

    def service_dir(self, name: str) -> Path:
        return self.infra_dir.resolve() / name
