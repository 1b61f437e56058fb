"""The stream glue without Kafka: order of delivery, state and acknowledgement; poison records;
shutdown; gap filling; batching; the sessions table's lifetime. Fakes stand in for Faust only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from functools import partial
from typing import Any

import pytest

from simplemem.processors.ingest.streaming import SessionState
from simplemem.processors.ingest.windowing import SessionBuffer
from simplemem.schemas.keys import SessionKey
from simplemem.schemas.stream import SourceRef
from simplemem.streams.batching import Batcher
from simplemem.streams.gaps import GapGuard, Item
from simplemem.streams.ownership import Ownership, Stamp
from simplemem.streams.runner import AgentRunner, Batch, Handled, Output
from simplemem.streams.worker import SessionTable
from tests.helpers import message


def item(offset: int, value: bytes = b"ok", partition: int = 0) -> Item:
    return Item(SourceRef(topic="turns", partition=partition, offset=offset), None, value)


class Log:
    def __init__(self) -> None:
        self.events: list[str] = []

    async def deliver(self, records: Sequence[Output]) -> None:
        self.events.extend(f"deliver {v.decode()}" for _, _, v in records)

    def batch(self, *items: Item) -> Batch:
        async def ack() -> None:
            self.events.append("ack " + ",".join(str(i.source.offset) for i in items))

        return Batch(list(items), ack)


class RecordingStep:
    """Outputs each value; its state write is logged; a value "bad" fails the stage."""

    def __init__(self, log: Log, gate: asyncio.Event | None = None) -> None:
        self.log = log
        self.gate = gate

    async def prepare(self, items: list[Item]) -> list[Item]:
        return items

    async def finish(self, items: list[Item]) -> Handled:
        if self.gate is not None:
            await self.gate.wait()
        if any(i.value == b"bad" for i in items):
            raise ValueError("cannot read this record")
        offsets = ",".join(str(i.source.offset) for i in items)
        return Handled(
            [("out", None, i.value) for i in items], lambda: self.log.events.append(f"state {offsets}")
        )

    def poison(self, item: Item, error: BaseException) -> list[Output]:
        return [("dlq", None, f"dead {item.source.offset} {error}".encode())]


async def from_list(batches: list[Batch]) -> AsyncIterator[Batch]:
    for b in batches:
        yield b


def test_outputs_are_delivered_then_state_written_then_the_batch_acknowledged() -> None:
    log = Log()
    runner = AgentRunner(RecordingStep(log), log.deliver, overlap=True)
    asyncio.run(runner.run(from_list([log.batch(item(0), item(1)), log.batch(item(2))])))
    assert log.events == [
        "deliver ok",
        "deliver ok",
        "state 0,1",
        "ack 0,1",
        "deliver ok",
        "state 2",
        "ack 2",
    ]


class DurableStateStep(RecordingStep):
    """Its state write returns only once the (slow) durable store took it, as the sessions table's does."""

    async def finish(self, items: list[Item]) -> Handled:
        handled = await super().finish(items)
        written = handled.commit

        async def durable() -> None:
            self.log.events.append("state sent")
            await asyncio.sleep(0.01)  # Kafka acknowledging the changelog records
            written()

        return Handled(handled.outputs, durable)


def test_a_batch_is_acknowledged_only_once_its_state_write_returned() -> None:
    """The fault run's lost turns: offsets committed while their session states were still queued."""
    log = Log()
    runner = AgentRunner(DurableStateStep(log), log.deliver, overlap=True)
    asyncio.run(runner.run(from_list([log.batch(item(0)), log.batch(item(1))])))
    assert log.events == [
        "deliver ok",
        "state sent",
        "state 0",
        "ack 0",
        "deliver ok",
        "state sent",
        "state 1",
        "ack 1",
    ]


def test_a_batch_whose_states_were_written_across_a_rebalance_is_read_again() -> None:
    """A rebalance that begins during the state write may restore older states over the new ones
    (a kept partition's restore read the changelog's end before they reached it): no acknowledgement."""
    log, rebalances = Log(), [0]

    class RebalancedDuringWrite(DurableStateStep):
        async def finish(self, items: list[Item]) -> Handled:
            handled = await super().finish(items)
            durable = handled.commit

            async def across_a_rebalance() -> None:
                rebalances[0] += items[0].source.offset == 0  # only the first batch's write
                await durable()  # type: ignore[misc]

            return Handled(handled.outputs, across_a_rebalance)

    runner = AgentRunner(RebalancedDuringWrite(log), log.deliver)
    first, second = log.batch(item(0)), log.batch(item(1))
    first.moment = second.moment = lambda: rebalances[0]
    asyncio.run(runner.run(from_list([first, second])))
    assert "ack 0" not in log.events and log.events[-1] == "ack 1"
    assert runner.fenced == 1


def test_a_batch_of_states_reaches_the_table_through_its_durable_write() -> None:
    """With a durable write, the table changes only through it, after it returned."""
    table: dict[bytes, bytes] = {}
    written: list[bytes] = []

    async def write(changes: Any) -> None:
        assert not table, "nothing visible before the write is acknowledged"
        written.extend(changes)
        table.update(changes)

    sessions = SessionTable(table, write)
    a, b = SessionKey("t", "a"), SessionKey("t", "b")
    asyncio.run(sessions.put_all({a: _state(pending=True), b: _state(closed_at=100.0)}))
    assert written == [a.encode(), b.encode()] and set(table) == set(written)
    assert sessions.idle(now=200.0, pause_seconds=5, idle_seconds=30) == [a], "the timers know the states"
    assert sessions.expire(now=200.0, grace_seconds=60) == 1


def test_a_poison_record_becomes_a_dead_letter_and_the_rest_goes_on() -> None:
    log = Log()
    runner = AgentRunner(RecordingStep(log), log.deliver)
    batches = [log.batch(item(0), item(1, b"bad"), item(2)), log.batch(item(3))]
    asyncio.run(runner.run(from_list(batches)))
    assert log.events == [
        "deliver ok",
        "state 0",
        "deliver dead 1 cannot read this record",
        "deliver ok",
        "state 2",
        "ack 0,1,2",
        "deliver ok",
        "state 3",
        "ack 3",
    ]
    assert runner.poisoned == 1


def test_a_batch_cut_short_by_shutdown_is_neither_stored_nor_acknowledged() -> None:
    log = Log()
    gate = asyncio.Event()  # never set: the stage waits (a store outage) until cancelled

    async def scenario() -> None:
        runner = AgentRunner(RecordingStep(log, gate), log.deliver, overlap=True)
        task = asyncio.ensure_future(runner.run(from_list([log.batch(item(0)), log.batch(item(1))])))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert log.events == [], "replayed by the next owner of the partition"


def test_a_batch_whose_partition_went_to_another_worker_writes_no_state_and_is_not_acknowledged() -> None:
    """A zombie's state write would reach the changelog after the new owner's (simplemem/streams/ownership.py)."""
    tp = ("turns", 0)

    async def scenario(lose_during_delivery: bool) -> list[str]:
        log = Log()
        ownership = Ownership()
        ownership.assigned([tp])

        async def deliver(records: Sequence[Output]) -> None:
            await log.deliver(records)
            if lose_during_delivery:
                ownership.revoked([tp])
                ownership.assigned([("turns", 1)])

        gate = asyncio.Event()
        runner = AgentRunner(RecordingStep(log, gate), deliver)
        batch = log.batch(item(0))
        batch.still_ours = partial(ownership.holds, ownership.stamp([tp]))
        task = asyncio.ensure_future(runner.run(from_list([batch, log.batch(item(1))])))
        if not lose_during_delivery:  # lost while the stage computes (a store outage, say)
            ownership.revoked([tp])
            ownership.assigned([("turns", 1)])
        gate.set()
        await task
        assert runner.fenced == 1
        return log.events

    assert asyncio.run(scenario(False)) == ["deliver ok", "state 1", "ack 1"]
    assert asyncio.run(scenario(True)) == ["deliver ok", "deliver ok", "state 1", "ack 1"]


def test_ownership_survives_a_rebalance_that_keeps_a_partition_but_not_one_that_moves_it() -> None:
    kept, moved = ("turns", 0), ("turns", 1)

    async def scenario() -> None:
        ownership = Ownership()
        ownership.assigned([kept, moved])
        stamp = ownership.stamp([kept, moved])
        ownership.revoked([kept, moved])  # eager: everything is revoked first
        waiting = asyncio.ensure_future(ownership.holds(ownership.stamp([kept])))
        await asyncio.sleep(0.01)
        assert not waiting.done()  # no answer while the assignment is unknown
        ownership.assigned([kept])
        assert await waiting
        assert not await ownership.holds(stamp)
        ownership.revoked([kept])
        ownership.assigned([kept, moved])  # back again: another worker may have written meanwhile
        assert not await ownership.holds(stamp)
        assert await ownership.holds(ownership.stamp([kept, moved]))

        flag = [True]
        during = Ownership(lambda: flag[0], poll_seconds=0.005)
        during.assigned([kept])
        pending = asyncio.ensure_future(during.holds(during.stamp([kept])))
        await asyncio.sleep(0.02)
        assert not pending.done()  # Faust says a rebalance is in progress
        flag[0] = False
        assert await pending

    asyncio.run(scenario())


def test_after_a_rebalance_no_batch_taken_before_it_is_delivered_even_on_a_kept_partition() -> None:
    """The fault run's lost turns: a batch with records of a kept and a moved partition was fenced,
    the next one (kept partition only) delivered; the kept partition's output then had later turns
    before the fenced ones, read again after it, which the memorize step skipped as replays."""
    kept, moved = ("turns", 0), ("turns", 1)

    async def scenario() -> tuple[list[str], int]:
        log, generation = Log(), [1]
        ownership = Ownership(generation=lambda: generation[0])
        ownership.assigned([kept, moved])
        gate = asyncio.Event()
        runner = AgentRunner(RecordingStep(log, gate), log.deliver)
        mixed = log.batch(item(0), item(1), item(0, partition=1))
        mixed.still_ours = partial(ownership.holds, Stamp(ownership.stamp([kept, moved]).epochs, 1))
        behind = log.batch(item(2))
        behind.still_ours = partial(ownership.holds, Stamp(ownership.stamp([kept]).epochs, 1))
        task = asyncio.ensure_future(runner.run(from_list([mixed, behind])))
        await asyncio.sleep(0.01)
        ownership.revoked([kept, moved])
        generation[0] = 2
        ownership.assigned([kept])
        gate.set()
        await task
        return log.events, runner.fenced

    events, fenced = asyncio.run(scenario())
    assert events == [] and fenced == 2, "offset 2 would be delivered before 0 and 1"


def test_a_batch_never_mixes_records_fetched_before_and_after_a_rebalance() -> None:
    async def committed(topic: str, partition: int) -> int | None:
        return None

    async def fetch(topic: str, partition: int, first: int, end: int) -> list[Item]:
        return []

    async def mark(hole: Any) -> None:
        pass

    stream = FakeStream([0, 1, 0, 1], generations=[1, 1, 2, 2])  # read again after the rebalance
    batcher = Batcher(size=10, linger=0.0, guard=GapGuard(committed, fetch), mark_gap=mark)

    async def scenario() -> list[list[int]]:
        return [[i.source.offset for i in b.items] async for b in batcher.batches(stream)]

    assert asyncio.run(scenario()) == [[0, 1]] and stream.acked == []


def test_the_gap_guard_puts_skipped_records_back_in_order() -> None:
    fetched: list[tuple[int, int]] = []

    async def committed(topic: str, partition: int) -> int | None:
        return 10

    async def fetch(topic: str, partition: int, first: int, end: int) -> list[Item]:
        fetched.append((first, end))
        return [item(o) for o in range(first, end)]

    guard = GapGuard(committed, fetch)

    async def scenario() -> tuple[list[int], list[int]]:
        first = await guard.complete([item(13), item(14)])
        second = await guard.complete([item(15)])
        return [i.source.offset for i in first], [i.source.offset for i in second]

    first, second = asyncio.run(scenario())
    assert first == [10, 11, 12, 13, 14] and second == [15]
    assert fetched == [(10, 13)]
    assert guard.filled() == [("turns", 0, 10, 12)] and guard.filled() == []


class FakeStream:
    """A Faust stream in manual-acknowledgement mode: everything is buffered at once."""

    def __init__(self, offsets: list[int], generations: list[int] | None = None) -> None:
        self.pending = list(offsets)
        self.generations = list(generations or [1] * len(offsets))
        self.acked: list[int] = []
        self.channel = self

    @property
    def queue(self) -> FakeStream:
        return self

    def empty(self) -> bool:
        return not self.pending

    async def events(self) -> AsyncIterator[Any]:
        while self.pending:
            offset, generation = self.pending.pop(0), self.generations.pop(0)
            fields = {"topic": "turns", "partition": 0, "offset": offset, "key": None, "value": b"v"}
            msg = type("M", (), {**fields, "generation_id": generation})
            yield type("E", (), {"message": msg})()

    async def ack(self, event: Any) -> bool:
        self.acked.append(event.message.offset)
        return True


def test_batches_take_what_is_buffered_and_ack_only_when_told() -> None:
    marked: list[Any] = []

    async def committed(topic: str, partition: int) -> int | None:
        return 5

    async def fetch(topic: str, partition: int, first: int, end: int) -> list[Item]:
        return [item(o) for o in range(first, end)]

    async def mark(hole: Any) -> None:
        marked.append(hole)

    stream = FakeStream([7, 8, 9])
    batcher = Batcher(size=2, linger=0.0, guard=GapGuard(committed, fetch), mark_gap=mark)

    async def scenario() -> list[list[int]]:
        seen = []
        async for batch in batcher.batches(stream):
            seen.append([i.source.offset for i in batch.items])
            assert stream.acked == [] or stream.acked[-1] < batch.items[0].source.offset
            await batch.ack()
        return seen

    assert asyncio.run(scenario()) == [[5, 6, 7, 8], [9]]
    assert stream.acked == [7, 8, 9] and marked == [("turns", 0, 5, 6)]


def _state(closed_at: float | None = None, pending: bool = False) -> SessionState:
    buffer = SessionBuffer(messages=[message(0)], last_seen=100.0) if pending else None
    return SessionState(buffer=buffer, closed_at=closed_at)


def test_closed_sessions_are_removed_after_their_grace_period() -> None:
    table: dict[bytes, bytes] = {}
    sessions = SessionTable(table)
    closed, reopened, open_ = SessionKey("t", "closed"), SessionKey("t", "reopened"), SessionKey("t", "open")
    sessions.put(closed, _state(closed_at=100.0))
    sessions.put(reopened, _state(closed_at=100.0))
    sessions.put(open_, _state(pending=True))
    table[reopened.encode()] = _state(pending=True).model_dump_json().encode()  # a turn came back

    assert sessions.expire(now=150.0, grace_seconds=60) == 0, "within the grace period"
    assert sessions.expire(now=200.0, grace_seconds=60) == 1
    assert set(table) == {reopened.encode(), open_.encode()}
    assert sessions.idle(now=200.0, pause_seconds=5, idle_seconds=30) == [open_]
    assert sessions.idle(200.0, 5, 30) == []


def test_a_worker_removes_only_the_closed_sessions_of_its_own_partitions() -> None:
    """The table also holds standby copies of other workers' sessions: removing one of those could
    erase, in the changelog, a session its owner has just reopened."""
    table: dict[bytes, bytes] = {}
    sessions = SessionTable(table)
    mine, theirs = SessionKey("t", "mine"), SessionKey("t", "theirs")
    sessions.put(mine, _state(closed_at=100.0))
    sessions.put(theirs, _state(closed_at=100.0))
    assert sessions.expire(now=1000.0, grace_seconds=60, mine=lambda key: key == mine) == 1
    assert set(table) == {theirs.encode()}


def test_a_restarted_worker_learns_its_sessions_from_the_table() -> None:
    table: dict[bytes, bytes] = {}
    SessionTable(table).put(SessionKey("t", "a"), _state(closed_at=100.0))
    SessionTable(table).put(SessionKey("t", "b"), _state(pending=True))
    restarted = SessionTable(table)
    restarted.seed()
    assert restarted.expire(now=1000.0, grace_seconds=60) == 1
    assert restarted.idle(now=1000.0, pause_seconds=5, idle_seconds=30) == [SessionKey("t", "b")]


def test_the_gap_guard_reports_what_it_re_read_as_the_refetched_metric() -> None:
    import anyio

    from simplemem.schemas.stream import SourceRef
    from simplemem.streams.gaps import GapGuard, Item
    from simplemem.streams.metrics import REFETCHED

    async def committed(topic: str, partition: int) -> int | None:
        return 0

    async def fetch(topic: str, partition: int, first: int, end: int) -> list[Item]:
        return [
            Item(SourceRef(topic=topic, partition=partition, offset=o), b"k", b"v") for o in range(first, end)
        ]

    before = REFETCHED._value.get()
    guard = GapGuard(committed, fetch)
    late = Item(SourceRef(topic="turns", partition=0, offset=3), b"k", b"v")
    assert len(anyio.run(guard.complete, [late])) == 4
    assert REFETCHED._value.get() - before == 3


def test_a_pause_check_waits_while_the_sessions_turns_are_still_to_scrub() -> None:
    """A backlog is not a pause: the check is held (and asked for again), not dropped."""
    from simplemem.streams.backlog import ScrubBacklog

    backlog, sessions = ScrubBacklog(), SessionTable({})
    key = SessionKey("t", "open")
    sessions.put(key, _state(pending=True))
    assert not backlog.behind(0, 40), "nothing scrubbed since the start: not held"
    log = Log()
    runner = AgentRunner(RecordingStep(log), log.deliver, done=backlog.done)
    asyncio.run(runner.run(from_list([log.batch(item(10), item(11), item(30, partition=1))])))
    assert backlog.finished == {0: 11, 1: 30}
    assert backlog.behind(0, 40) and not backlog.behind(0, 12) and not backlog.behind(0, None)
    assert sessions.idle(200.0, 5, 30, held=lambda k: backlog.behind(0, 40)) == []
    assert sessions.idle(200.0, 5, 30, held=lambda k: backlog.behind(0, 12)) == [key]
    backlog.reset()
    assert not backlog.behind(0, 40)


def test_the_runner_counts_the_batches_in_flight() -> None:
    """What the re-read of skipped records asks before it touches a partition: an agent at work."""
    log, gate = Log(), asyncio.Event()
    runner = AgentRunner(RecordingStep(log, gate), log.deliver, overlap=True)

    async def scenario() -> list[int]:
        seen = []
        task = asyncio.ensure_future(runner.run(from_list([log.batch(item(0)), log.batch(item(1))])))
        await asyncio.sleep(0.01)
        seen.append(runner.in_flight)  # the first waits in finish, the second is prepared
        gate.set()
        await task
        seen.append(runner.in_flight)
        return seen

    assert asyncio.run(scenario()) == [2, 0]
