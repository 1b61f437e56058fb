"""OpenSearch 2.19, one node started in-process from Maven Central jars.

No full OpenSearch distribution is on the registries these machines reach (the ``integ-test-zip`` holds
only the transport module, and its launcher refuses to run as root). ``simplemem/infra/opensearch/OpenSearchNode.java``
starts a node with the plugins the project needs from the jars of ``simplemem/infra/opensearch/pom.xml``, run by
Java's single-file source launcher (hence javac). Ready means the cluster health reaches yellow.
"""

from __future__ import annotations

from pathlib import Path

from simplemem.infra.daemon import Launch, Service
from simplemem.infra.install import ensure_java, maven_libs
from simplemem.infra.settings import InfraSettings
from simplemem.schemas.settings import LOCAL_HOST

SOURCE = Path(__file__).resolve().parent / "opensearch"

# as OpenSearch's own jvm.options
JVM_OPTIONS = [
    "-Djava.locale.providers=SPI,COMPAT",
    "-Dlog4j.shutdownHookEnabled=false",
    "-Dlog4j2.disable.jmx=true",
    "-Dio.netty.noUnsafe=true",
    "-Dio.netty.noKeySetOptimization=true",
    "-Dio.netty.recycler.maxCapacityPerThread=0",
    "-Dopensearch.set.netty.runtime.available.processors=false",
]


class OpenSearch(Service):
    name = "opensearch"
    POM = SOURCE / "pom.xml"
    MAIN = SOURCE / "OpenSearchNode.java"

    def __init__(self, settings: InfraSettings) -> None:
        super().__init__(settings)
        self.home = self.root / "home"
        self.libs: Path | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{LOCAL_HOST}:{self.settings.opensearch_port}"

    @property
    def ports(self) -> list[int]:
        return [self.settings.opensearch_port, self.settings.opensearch_transport_port]

    def install(self) -> None:
        ensure_java(self.install_log, need_compiler=True)  # the single-file source launcher compiles
        self.libs = maven_libs(self.POM, "opensearch", self.settings, self.install_log)

    def prepare(self) -> Launch:
        assert self.libs is not None, "install() first"
        tmp = self.root / "tmp"
        for folder in (self.home, self.data_dir, self.log_dir, tmp):
            folder.mkdir(parents=True, exist_ok=True)
        s = self.settings
        argv = [
            ensure_java(self.install_log, need_compiler=True),
            *s.opensearch_heap.split(),
            "-XX:+UseG1GC",
            "-XX:MaxDirectMemorySize=256m",
            "-Djava.awt.headless=true",
            "-Dfile.encoding=UTF-8",
            f"-Djava.io.tmpdir={tmp}",
            *JVM_OPTIONS,
            "-cp",
            f"{self.libs}/*",
            str(self.MAIN),
            f"path.home={self.home}",
            f"path.data={self.data_dir}",
            f"path.logs={self.log_dir}",
            "cluster.name=simplemem",
            "node.name=simplemem-node",
            "discovery.type=single-node",
            f"network.host={LOCAL_HOST}",
            f"http.port={s.opensearch_port}",
            f"transport.port={s.opensearch_transport_port}",
            "cluster.routing.allocation.disk.threshold_enabled=false",
        ]
        return Launch(argv, self.root)

    def probe(self, timeout: float) -> bool:
        import httpx

        params = {"wait_for_status": "yellow", "timeout": f"{max(1, int(timeout))}s"}
        try:
            # trust_env=False: a loopback request must not go to an HTTP proxy from the environment
            resp = httpx.get(
                f"{self.endpoint}/_cluster/health", params=params, timeout=timeout + 1, trust_env=False
            )
            health = resp.json()
        except (httpx.HTTPError, ValueError):
            return False
        # 408 with the health so far when it is not yellow within `timeout`
        return resp.status_code == 200 and health.get("status") in ("yellow", "green")
