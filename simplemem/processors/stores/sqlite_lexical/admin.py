"""An operator's view of the lexical file: its tenants, a tenant's size, compaction, closing."""

from __future__ import annotations

from simplemem.processors.stores.sqlite_lexical.base import SqliteLexicalBase


class SqliteAdmin(SqliteLexicalBase):
    def tenants(self) -> list[str]:
        with self._lock:
            rows = self._db.execute(
                "SELECT name FROM tenants t WHERE EXISTS (SELECT 1 FROM units u WHERE u.tenant_id = t.id)"
            ).fetchall()
        return [r[0] for r in rows]

    def expunge(self) -> None:
        """Merge the FTS index (its old segments still hold deleted rows' terms), then move the WAL
        into the database and truncate it; with ``secure_delete`` freed bytes are zeroed."""
        with self._lock:
            self._db.execute("INSERT INTO units_fts(units_fts) VALUES ('optimize')")
            self._db.execute("INSERT INTO contexts_fts(contexts_fts) VALUES ('optimize')")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def count(self, tenant_id: str) -> int:
        number = self._number(tenant_id)
        with self._lock:
            row = self._db.execute("SELECT count(*) FROM units WHERE tenant_id=?", (number,)).fetchone()
        return int(row[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
