"""A filter's dates and ``as_of`` applied to a tenant's time columns held in numpy arrays (the
embedded vector rows and lexical columns keep the same three: event days, stated time)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from simplemem.processors.stores.protocols import SymbolicFilter


def within_time(
    flt: SymbolicFilter,
    event_start: npt.NDArray[np.int64],
    event_end: npt.NDArray[np.int64],
    stated_at: npt.NDArray[np.float64],
) -> npt.NDArray[np.bool_]:
    """Which rows meet the filter's time constraints: an event overlapping its days (or, with
    ``or_stated``, stated within them), and stated by its ``stated_before``. The arrays are the
    rows' columns in one order: event days as ordinals, stated times as POSIX seconds."""
    ok = np.ones(len(stated_at), dtype=np.bool_)
    if flt.first_day is not None and flt.last_day is not None:
        ok = (event_end >= flt.first_day.toordinal()) & (event_start <= flt.last_day.toordinal())
        if flt.or_stated:
            start, end = flt.stated_bounds()
            ok |= (stated_at >= start) & (stated_at < end)
    if flt.stated_before is not None:
        ok &= stated_at <= flt.stated_before.timestamp()
    return ok
