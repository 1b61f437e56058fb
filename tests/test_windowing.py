"""Windowing edge cases: full windows, stride context, idle gaps, session ends, isolation of sessions."""

from simplemem.processors.ingest.sessions import LocalSessions
from simplemem.processors.ingest.windowing import Windower
from simplemem.schemas.keys import SessionKey
from simplemem.schemas.window import CloseReason
from tests.helpers import message


def sessions(window_size: int, stride: int, idle_seconds: float) -> LocalSessions:
    return LocalSessions(Windower(window_size, stride, idle_seconds))


def test_first_window_waits_for_size_then_slides_by_stride() -> None:
    w = sessions(window_size=4, stride=2, idle_seconds=3600)
    out = [win for i in range(8) for win in w.add(message(i))]
    assert [len(x.messages) for x in out] == [4, 4, 4]
    assert [x.new_from for x in out] == [0, 2, 2]
    decided = [m.message_id for x in out for m in x.new_messages]
    assert decided == [f"s1:m{i}" for i in range(8)]  # each message decided exactly once


def test_end_flushes_partial_window_with_context() -> None:
    w = sessions(window_size=4, stride=2, idle_seconds=3600)
    for i in range(5):
        w.add(message(i))
    rest = w.close_all()
    assert len(rest) == 1
    assert rest[0].reason == CloseReason.END
    assert [m.message_id for m in rest[0].new_messages] == ["s1:m4"]
    assert rest[0].new_from == 2
    assert w.close_all() == []


def test_a_message_that_ends_its_session_closes_the_window_with_it() -> None:
    w = sessions(window_size=4, stride=2, idle_seconds=3600)
    for i in range(4):
        w.add(message(i))
    out = w.add(message(4).model_copy(update={"ends_session": True}))
    assert [x.reason for x in out] == [CloseReason.END]
    assert [m.message_id for m in out[0].new_messages] == ["s1:m4"]
    assert w.close_all() == [], "nothing of the ended session stays open"
    reopened = w.add(message(6))
    assert reopened == [] and [m.message_id for m in w.close_all()[0].messages] == ["s1:m6"]


def test_a_message_that_ends_its_session_and_fills_a_window_emits_it_once() -> None:
    w = sessions(window_size=4, stride=2, idle_seconds=3600)
    for i in range(3):
        w.add(message(i))
    out = w.add(message(3).model_copy(update={"ends_session": True}))
    assert [x.reason for x in out] == [CloseReason.FULL]
    assert [m.message_id for x in out for m in x.new_messages] == [f"s1:m{i}" for i in range(4)]
    assert w.close_all() == []


def test_event_time_gap_closes_window_before_new_message() -> None:
    w = sessions(window_size=10, stride=10, idle_seconds=60)
    w.add(message(0))
    w.add(message(1))
    out = w.add(message(100))  # 99 minutes later
    assert len(out) == 1 and out[0].reason == CloseReason.IDLE
    assert [m.message_id for m in out[0].messages] == ["s1:m0", "s1:m1"]
    assert [m.message_id for m in w.close_all()[0].messages] == ["s1:m100"]


def test_closing_a_window_emits_its_undecided_messages_only() -> None:
    w_pure = Windower(window_size=4, stride=2, idle_seconds=3600)
    buf = None
    for i in range(5):
        buf, _ = w_pure.step(buf, message(i))
    assert buf is not None
    empty, closed = w_pure.close(buf, CloseReason.IDLE)
    assert empty is None and [m.message_id for m in closed[0].new_messages] == ["s1:m4"]
    assert closed[0].reason == CloseReason.IDLE


def test_sessions_and_tenants_do_not_mix() -> None:
    w = sessions(window_size=2, stride=2, idle_seconds=3600)
    out = []
    out += w.add(message(0, session="a"))
    out += w.add(message(0, session="b"))
    out += w.add(message(0, session="a", tenant="t2"))
    out += w.add(message(1, session="a"))
    assert len(out) == 1
    assert {m.session_key for m in out[0].messages} == {SessionKey("t1", "a")}


def test_stride_equal_to_size_has_no_context() -> None:
    w = sessions(window_size=3, stride=3, idle_seconds=3600)
    out = [win for i in range(6) for win in w.add(message(i))]
    assert [x.new_from for x in out] == [0, 0]


def test_single_message_window() -> None:
    w = sessions(window_size=1, stride=1, idle_seconds=3600)
    assert len(w.add(message(0))) == 1
    assert w.close_all() == []


def test_a_pause_decides_the_tail_once_and_keeps_it_as_context_for_what_follows() -> None:
    windower = Windower(window_size=4, stride=2, idle_seconds=3600)
    w = LocalSessions(windower)
    key = SessionKey("t1", "s1")
    decided: list[str] = []
    for i in range(3):
        w.add(message(i))
    w.buffers[key], settled = windower.on_silence(w.buffers[key], silent=6, pause=5, idle=3600)
    assert [x.reason for x in settled] == [CloseReason.PAUSE]
    decided += [m.message_id for x in settled for m in x.new_messages]
    assert windower.on_silence(w.buffers[key], silent=7, pause=5, idle=3600)[1] == []  # nothing new
    out = [win for i in range(3, 8) for win in w.add(message(i))]
    decided += [m.message_id for x in out for m in x.new_messages]
    assert out[0].messages[0].message_id == "s1:m1" and out[0].new_from == 2  # context kept
    rest = w.close_all()
    decided += [m.message_id for x in rest for m in x.new_messages]
    assert decided == [f"s1:m{i}" for i in range(8)]  # each message decided exactly once


def test_a_complete_exchange_is_decided_at_once_and_a_long_silence_closes() -> None:
    windower = Windower(window_size=10, stride=5, idle_seconds=3600)
    w = LocalSessions(windower)
    w.add(message(0))
    out = w.add(message(1).model_copy(update={"ends_exchange": True}))
    assert [x.reason for x in out] == [CloseReason.PAUSE]
    assert [m.message_id for m in out[0].new_messages] == ["s1:m0", "s1:m1"]
    key = SessionKey("t1", "s1")
    assert key in w.buffers  # the session stays open
    w.add(message(2))
    kept, closed = windower.on_silence(w.buffers[key], silent=4000, pause=5, idle=3600)
    assert kept is None and [m.message_id for m in closed[0].new_messages] == ["s1:m2"]


def test_silent_sessions_are_settled_after_the_pause_and_closed_after_the_idle_time() -> None:
    w = sessions(window_size=10, stride=5, idle_seconds=3600)
    w.add(message(0, session="quiet"), now=100.0)
    w.add(message(0, session="gone"), now=0.0)
    w.add(message(0, session="talking"), now=109.0)
    out = w.close_silent(now=110.0, pause=5, idle=100)
    assert sorted((x.session_id, x.reason) for x in out) == [
        ("gone", CloseReason.IDLE),
        ("quiet", CloseReason.PAUSE),
    ]
    assert set(w.buffers) == {SessionKey("t1", "quiet"), SessionKey("t1", "talking")}  # settled stays open
    assert w.close_silent(now=111.0, pause=5, idle=100) == []  # nothing new to decide


def test_a_later_turn_of_the_tenant_closes_its_sessions_left_idle() -> None:
    """A bulk import of sessions that no event ends: each one closes once a turn of its tenant is
    stated more than the idle time after its last, not at the end of the input."""
    w = sessions(window_size=10, stride=5, idle_seconds=3600)
    for i in range(3):
        w.add(message(i, session="monday"))
    w.add(message(0, session="other-tenant", tenant="t2"))
    assert w.add(message(30, session="monday-evening")) == []  # 28 minutes later: not idle yet
    out = w.add(message(80, session="tuesday"))  # 78 minutes after monday's last turn
    assert [(x.session_id, x.reason) for x in out] == [("monday", CloseReason.IDLE)]
    assert [m.message_id for m in out[0].new_messages] == ["monday:m0", "monday:m1", "monday:m2"]
    assert set(w.buffers) == {
        SessionKey("t1", "monday-evening"),  # 50 minutes before tuesday's turn
        SessionKey("t1", "tuesday"),
        SessionKey("t2", "other-tenant"),  # another tenant's time is its own
    }
    out = w.add(message(95, session="tuesday"))
    assert [x.session_id for x in out] == ["monday-evening"]
    w.forget_closed()
    assert set(w.histories) <= set(w.buffers)


def test_closing_idle_sessions_early_cuts_the_same_windows_as_at_their_next_turn() -> None:
    """Interleaved sessions in time order: every message decided once, in the windows that the
    session's own gaps and the end of the input would cut."""
    w = sessions(window_size=4, stride=2, idle_seconds=3600)
    order = [("a", 0), ("b", 1), ("a", 2), ("b", 3), ("a", 4), ("b", 200), ("a", 400), ("a", 401)]
    out = [win for s, i in order for win in w.add(message(i, session=s))] + w.close_all()
    windows = sorted((x.session_id, [m.message_id for m in x.new_messages]) for x in out)
    assert windows == [
        ("a", ["a:m0", "a:m2", "a:m4"]),
        ("a", ["a:m400", "a:m401"]),
        ("b", ["b:m1", "b:m3"]),
        ("b", ["b:m200"]),
    ]


def test_a_turn_stated_earlier_than_the_tenant_s_latest_closes_nothing() -> None:
    """Input grouped by session (each session's whole span, then the next's): a session is not left
    idle by a turn stated before its own last one."""
    w = sessions(window_size=10, stride=5, idle_seconds=3600)
    w.add(message(500, session="late"))
    assert w.add(message(0, session="early")) == []
    assert w.add(message(1, session="early")) == []
    assert set(w.buffers) == {SessionKey("t1", "late"), SessionKey("t1", "early")}


def test_many_turns_keep_the_idle_order_near_the_open_sessions() -> None:
    w = sessions(window_size=10, stride=5, idle_seconds=3600)
    for i in range(2000):
        w.add(message(i, session=f"s{i % 3}", minutes=0.01))
    assert len(w._by_last_turn["t1"]) <= 2 * len(w.buffers) + 64
