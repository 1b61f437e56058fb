"""Settings of the local service launchers (infra/services.py): the one ``Settings`` object.

The launchers' fields (ports, folders, heaps, timeouts) live in ``schemas/settings.py`` beside the
endpoints the stores connect to, so a port set once (``SIMPLEMEM_OPENSEARCH_PORT``) moves both.

Every service listens on 127.0.0.1 only; the ports, the state folder (data, logs, pid files) and the
download cache are settings, e.g. ``SIMPLEMEM_KAFKA_PORT=19092`` or ``SIMPLEMEM_INFRA_DIR=/tmp/infra``.
"""

from __future__ import annotations

from schemas.settings import LOCAL_HOST as HOST
from schemas.settings import REPO_ROOT
from schemas.settings import Settings as InfraSettings

__all__ = ["HOST", "REPO_ROOT", "InfraSettings"]
