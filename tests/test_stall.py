"""The stall watch: records waiting, committed offsets still, and nothing waited for by design."""

from __future__ import annotations

from simplemem.streams.stall import StallWatch

TP = ("t.scrubbed", 0)


def test_records_waiting_with_the_offset_still_for_the_limit_is_a_stall() -> None:
    watch = StallWatch(60)
    assert watch.observe(0, {TP: 5}, {TP: 9}, waiting_by_design=False) == []
    assert watch.observe(59, {TP: 5}, {TP: 9}, waiting_by_design=False) == []
    assert watch.observe(60, {TP: 5}, {TP: 9}, waiting_by_design=False) == [TP]


def test_an_offset_that_moves_starts_the_clock_again() -> None:
    watch = StallWatch(60)
    watch.observe(0, {TP: 5}, {TP: 90}, waiting_by_design=False)
    assert watch.observe(50, {TP: 6}, {TP: 90}, waiting_by_design=False) == []
    assert watch.observe(100, {TP: 6}, {TP: 90}, waiting_by_design=False) == []
    assert watch.observe(110, {TP: 6}, {TP: 90}, waiting_by_design=False) == [TP]


def test_nothing_waiting_is_no_stall_however_long() -> None:
    watch = StallWatch(60)
    for now in (0, 100, 1000):
        assert watch.observe(now, {TP: 9}, {TP: 9}, waiting_by_design=False) == []


def test_an_outage_or_a_restore_is_waited_for_and_the_clock_starts_after_it() -> None:
    watch = StallWatch(60)
    watch.observe(0, {TP: 5}, {TP: 9}, waiting_by_design=False)
    assert watch.observe(100, {TP: 5}, {TP: 9}, waiting_by_design=True) == []
    assert watch.observe(150, {TP: 5}, {TP: 9}, waiting_by_design=False) == []
    assert watch.observe(160, {TP: 5}, {TP: 9}, waiting_by_design=False) == [TP]


def test_a_partition_that_was_caught_up_waits_from_when_records_arrived() -> None:
    watch = StallWatch(60)
    watch.observe(0, {TP: 9}, {TP: 9}, waiting_by_design=False)
    watch.observe(100, {TP: 9}, {TP: 12}, waiting_by_design=False)
    assert watch.observe(150, {TP: 9}, {TP: 12}, waiting_by_design=False) == []
    assert watch.observe(160, {TP: 9}, {TP: 12}, waiting_by_design=False) == [TP]


def test_after_offsets_could_not_be_read_the_clock_starts_again() -> None:
    watch = StallWatch(60)
    watch.observe(0, {TP: 5}, {TP: 9}, waiting_by_design=False)
    watch.reset()  # Kafka was unreachable meanwhile
    assert watch.observe(100, {TP: 5}, {TP: 9}, waiting_by_design=False) == []
    assert watch.observe(160, {TP: 5}, {TP: 9}, waiting_by_design=False) == [TP]


def test_a_partition_acted_on_waits_the_whole_limit_again() -> None:
    """The re-read of skipped records: one seek per limit, not one per lag tick."""
    watch = StallWatch(15)
    watch.observe(0, {TP: 5}, {TP: 9}, waiting_by_design=False)
    assert watch.observe(15, {TP: 5}, {TP: 9}, waiting_by_design=False) == [TP]
    watch.forget(TP)
    assert watch.observe(20, {TP: 5}, {TP: 9}, waiting_by_design=False) == []
    assert watch.observe(34, {TP: 5}, {TP: 9}, waiting_by_design=False) == []
    assert watch.observe(35, {TP: 5}, {TP: 9}, waiting_by_design=False) == [TP]


def test_a_partition_left_out_while_its_agent_is_busy_starts_afresh() -> None:
    """The re-read watches idle agents only: a busy one's partitions are not passed, so they wait
    the whole limit again from when the agent is idle."""
    watch = StallWatch(15)
    watch.observe(0, {TP: 5}, {TP: 9}, waiting_by_design=False)
    watch.observe(10, {TP: 5}, {}, waiting_by_design=False)  # busy
    assert watch.observe(20, {TP: 5}, {TP: 9}, waiting_by_design=False) == []
    assert watch.observe(35, {TP: 5}, {TP: 9}, waiting_by_design=False) == [TP]


def test_records_waiting_while_their_agent_is_idle_are_read_again_from_the_committed_offset() -> None:
    """Faust can drop the records it fetched just before a rebalance; with nothing after them, the
    gap guard never sees the hole. An idle agent's waiting partition is sought back; a busy one's
    (its batch may hold those records) is left alone. Fakes stand in for Faust only."""
    import asyncio
    from types import SimpleNamespace

    from simplemem.streams import app as stream_app

    sought: list[tuple[str, int, int]] = []

    async def seek(tp: tuple[str, int], offset: int) -> None:
        sought.append((tp[0], tp[1], offset))

    idle_runner, busy_runner = SimpleNamespace(in_flight=0), SimpleNamespace(in_flight=1)
    empty = SimpleNamespace(queued=lambda: False)
    parts = SimpleNamespace(
        readers={"t.turns": (idle_runner, empty), "t.scrubbed": (busy_runner, empty)},
        app=SimpleNamespace(consumer=SimpleNamespace(seek=seek)),
        settings=SimpleNamespace(stream_resync_seconds=15),
    )
    committed = {("t.turns", 1): 40, ("t.scrubbed", 1): 7}
    ends = {("t.turns", 1): 52, ("t.scrubbed", 1): 9}
    watch = StallWatch(15)
    for now in (0.0, 16.0, 17.0):
        asyncio.run(stream_app._reread_if_skipped(parts, watch, committed, ends, now, False))  # type: ignore[arg-type]
    assert sought == [("t.turns", 1, 40)], "once, the idle agent's partition, from its committed offset"
