"""The persons the memories are about: the ``names`` table (a unit's person names and their parts,
:func:`index_names`), and a name written in a memory's own indexed words (its text, keywords and
date), where the NER model did not tag it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from simplemem.processors.stores.protocols import MIN_NAME_PREFIX
from simplemem.processors.stores.sqlite_bm25 import fts_term, quote
from simplemem.processors.stores.sqlite_keys import unit_key
from simplemem.processors.stores.sqlite_lexical.base import SqliteLexicalBase
from simplemem.processors.stores.sqlite_lexical.schema import tenant_token

_LAST_CHAR = "\U0010ffff"  # sorts after every character: a prefix's names lie below prefix + this


class SqliteNames(SqliteLexicalBase):
    def known_names(self, tenant_id: str, candidates: Sequence[str]) -> list[str]:
        """The candidates that name persons in the tenant's memory, with the names they abbreviate
        ("Mel" -> "mel", "melanie"): nicknames are usually prefixes."""
        lowered = sorted({c.lower() for c in candidates if c.strip()})
        if not lowered:
            return []
        # Each candidate as a range of the (tenant, name) index: [c, c + U+10FFFF) holds the names it
        # begins, [c, c + NUL) the name itself (a LIKE per prefix would read every name of the tenant
        # for every window decomposed).
        ranges = [(c, c + (_LAST_CHAR if len(c) >= MIN_NAME_PREFIX else "\0")) for c in lowered]
        bounds = ",".join("(?,?)" for _ in ranges)
        number = self._number(tenant_id)
        with self._lock:
            rows = self._db.execute(
                f"WITH r(lo, hi) AS (VALUES {bounds}) SELECT DISTINCT n.name FROM r "
                "JOIN names n ON n.tenant_id = ? AND n.name >= r.lo AND n.name < r.hi",
                [*(b for pair in ranges for b in pair), number],
            ).fetchall()
        return sorted(r[0] for r in rows)

    def all_names(self, tenant_id: str, limit: int) -> list[str] | None:
        number = self._number(tenant_id)
        with self._lock:
            rows = self._db.execute(
                "SELECT DISTINCT name FROM names WHERE tenant_id=? LIMIT ?", (number, limit + 1)
            ).fetchall()
        return None if len(rows) > limit else sorted(r[0] for r in rows)

    def ids_with_names(self, tenant_id: str, ids: Sequence[str], names: Sequence[str]) -> set[str]:
        """The ids among ``ids`` of memories about one of ``names``: in their persons, or named in their
        text."""
        if not ids or not names:
            return set()
        with self._lock:
            rowids = self._named(tenant_id, names)
            units = self._columns.get(tenant_id, self._tenants.number(tenant_id)).units
        pos = units.positions(rowids)
        named = {units.key[p] for p in pos[pos >= 0].tolist()}
        return {uid for uid in ids if unit_key(uid) in named}

    def _named(self, tenant_id: str, names: Sequence[str]) -> npt.NDArray[np.int64]:
        """The rowids (ascending) of the tenant's units about one of ``names``: listed in the unit's
        persons, or named in its own words (a person filter's search, :meth:`ids_with_names`). Within
        :meth:`one_query` they are found once: a question is ranked whole and by each of its aspects,
        under the same names. Call with the lock held."""
        held: dict[tuple[str, tuple[str, ...]], npt.NDArray[np.int64]] | None = getattr(
            self._together, "named", None
        )
        asked = (tenant_id, tuple(names))
        if held is not None and asked in held:
            return held[asked]
        marks = ",".join("?" * len(names))
        rows = self._db.execute(
            "SELECT u.rowid FROM names n JOIN units u ON u.tenant_id = n.tenant_id AND u.id = n.id "
            f"WHERE n.tenant_id = ? AND n.name IN ({marks}) "
            "UNION SELECT rowid FROM units_fts WHERE units_fts MATCH ?",
            [self._tenants.number(tenant_id), *(n.lower() for n in names), names_match(tenant_id, names)],
        ).fetchall()
        named = np.unique(np.array([r[0] for r in rows], dtype=np.int64))
        if held is not None:
            held[asked] = named
        return named


def names_match(tenant_id: str, names: Sequence[str]) -> str:
    """An FTS expression: the tenant's rows whose own words name one of ``names`` (all its words)."""
    named = " OR ".join(f"({fts_term(n.lower())})" for n in names)
    return f"{quote(tenant_token(tenant_id))} AND ({named})"
