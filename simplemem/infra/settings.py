"""The local development services' own settings (``simplemem infra``): ports, folders, heaps, timeouts.

Not the product's settings: the product reaches its services by URL (``SIMPLEMEM_OPENSEARCH_URL``,
``SIMPLEMEM_MILVUS_URI``, ``SIMPLEMEM_REDIS_URL``, ``SIMPLEMEM_KAFKA_BOOTSTRAP``), whose defaults are
these services on their default ports (:data:`~simplemem.schemas.settings.LOCAL_PORTS`). The variables
keep their ``SIMPLEMEM_*`` names.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from simplemem.schemas.settings import LOCAL_PORTS, REPO_ROOT


class InfraSettings(BaseSettings):
    """Every field can be set as ``SIMPLEMEM_<FIELD>`` (upper case); all services bind 127.0.0.1."""

    model_config = SettingsConfigDict(env_prefix="SIMPLEMEM_", extra="ignore", frozen=True)

    infra_dir: Path = Field(
        REPO_ROOT / ".infra", description="per-service data, logs and pid files (<infra_dir>/<service>/...)"
    )
    infra_cache_dir: Path = Field(
        Path.home() / ".cache" / "simplemem" / "infra",
        description="downloaded jars and the Milvus venv; outside the repo, shared by clones",
    )
    kafka_port: int = Field(LOCAL_PORTS["kafka"], ge=1, le=65535)
    kafka_controller_port: int = Field(9093, ge=1, le=65535)
    opensearch_port: int = Field(LOCAL_PORTS["opensearch"], ge=1, le=65535)
    opensearch_transport_port: int = Field(9300, ge=1, le=65535)
    milvus_port: int = Field(LOCAL_PORTS["milvus"], ge=1, le=65535)
    milvus_metrics_port: int = Field(
        9091, ge=1, le=65535, description="its /healthz; the next free port if taken (its components too)"
    )
    redis_port: int = Field(LOCAL_PORTS["redis"], ge=1, le=65535)
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


@lru_cache(maxsize=1)
def get_infra_settings() -> InfraSettings:
    """The process-wide infra settings, read once from the environment."""
    return InfraSettings()
