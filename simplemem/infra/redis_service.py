"""Redis from Debian's ``redis-server``, in the foreground, without persistence.

It holds the recent-turn buffer, which is rebuilt from the stream, so nothing is saved to disk
(``--save ""``, no append-only file). Ready means redis-py, the client the stores use, gets PONG.
"""

from __future__ import annotations

import os
import shutil

from simplemem.infra.daemon import Launch, Service
from simplemem.infra.errors import InfraError
from simplemem.infra.install import apt_install
from simplemem.schemas.settings import LOCAL_HOST


class Redis(Service):
    name = "redis"

    @property
    def endpoint(self) -> str:
        return f"redis://{LOCAL_HOST}:{self.settings.redis_port}/0"

    @property
    def ports(self) -> list[int]:
        return [self.settings.redis_port]

    @staticmethod
    def binary() -> str | None:
        """`redis-server`, also where root's PATH lacks /usr/sbin."""
        return shutil.which("redis-server") or next(
            (p for p in ("/usr/bin/redis-server", "/usr/sbin/redis-server") if os.access(p, os.X_OK)), None
        )

    def install(self) -> None:
        if self.binary() is None:
            apt_install(["redis-server"], self.install_log)
        if self.binary() is None:
            raise InfraError(f"redis: redis-server not found after installing it; see {self.install_log}")

    def prepare(self) -> Launch:
        binary = self.binary()
        assert binary is not None, "install() first"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        argv = [binary, "--daemonize", "no", "--bind", LOCAL_HOST, "--port", str(self.settings.redis_port)]
        argv += ["--save", "", "--appendonly", "no", "--dir", str(self.data_dir), "--logfile", ""]
        return Launch(argv, self.root)

    def probe(self, timeout: float) -> bool:
        import redis

        client = redis.Redis(
            host=LOCAL_HOST,
            port=self.settings.redis_port,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
        )
        try:
            return bool(client.ping())
        except (redis.RedisError, OSError):
            return False
        finally:
            client.close()
