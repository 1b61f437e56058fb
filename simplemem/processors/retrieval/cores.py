"""Whether an embedded query may use a second core now (:class:`SpareCore`).

On a busy machine a second thread of the query only takes turns with the first on one core, and it
cost more than it saved (a query's CPU up by a fifth at a load of three times the cores). The test is
the run queue (Linux: ``/proc/loadavg``'s runnable threads, the caller's among them), not the last
minute's load average, which stays above the cores for a minute after a burst of work has ended (an
ingest before a batch of queries); the load average only where there is no run queue to read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

RUN_QUEUE = Path("/proc/loadavg")  # its fourth field is "runnable/all" threads, as of now
READING_WEIGHT = 0.25  # a new reading's share of the running mean


def runnable_threads() -> int | None:
    """The threads ready to run on the machine now (None: no run queue to read here)."""
    try:
        return int(RUN_QUEUE.read_text().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class SpareCore:
    """Called once a query: whether fewer threads are ready to run than there are cores, in the mean
    of the readings of the run queue, each weighing :data:`READING_WEIGHT`. One reading alone now and
    then catches a thread about to sleep (one query in a hundred on an idle machine), and that query
    then ran in order, among the slowest; a machine that stays busy shows within a few queries."""

    mean: float = 1.0  # the caller's thread alone

    def __call__(self) -> bool:
        cores = os.cpu_count() or 1
        reading = runnable_threads()
        if reading is None:
            try:
                return os.getloadavg()[0] < cores
            except OSError:  # no load average here either: as on an idle machine
                return True
        self.mean += READING_WEIGHT * (reading - self.mean)
        return self.mean < cores
