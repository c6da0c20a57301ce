"""What `restore` takes from a rating's records on the output topic (`Changelog`): the highest seq
of a key that has no tombstone; after a tombstone, only a chain that starts again at seq 1, every
other event set aside with its reason. Every suffix of a valid history (what compaction can leave
of it) is taken whole."""

from hypothesis import given, settings
from hypothesis import strategies as st

from worker.operate.restore import BEFORE_SEQ_1, KEYS_SHOWN, OFF_CHAIN, Changelog
from worker.rules.hundredths import Hundredths
from worker.rules.interface import Kind
from worker.systems.arena.state import RatingState

KEY = "alice/blitz"
# A record of one key: an event (the chain it belongs to, its seq), or None for a tombstone.
Entry = tuple[int, int] | None


def state(chain: int, seq: int) -> RatingState:
    """A state that tells which chain (which life of the rating, between tombstones) it is of."""
    return RatingState(Hundredths(100_000 + chain), seq, (), seq)


def read(entries: list[Entry], key: str = KEY, log: Changelog[RatingState] | None = None) -> Changelog[RatingState]:
    log = Changelog(frozenset()) if log is None else log
    for entry in entries:
        if entry is None:
            log.erase(key)
        else:
            log.add(key, state(*entry), None, None, Kind.RATED_GAME, 0)
    return log


def test_a_late_copy_of_the_erased_rating_after_its_tombstone_is_set_aside() -> None:
    log = read([(0, 1), (0, 2), (0, 3), None, (0, 3)])
    assert KEY not in log.latest
    assert {r: (a.events, a.keys, a.more) for r, a in log.set_aside.items()} == {BEFORE_SEQ_1: (1, [KEY], False)}


def test_a_chain_from_seq_1_after_the_tombstone_is_taken() -> None:
    log = read([(0, 1), (0, 2), (0, 3), None, (1, 1), (1, 2)])
    assert log.latest[KEY] == state(1, 2)
    assert log.set_aside == {}


def test_an_old_event_after_the_new_seq_1_is_set_aside_unless_it_continues_the_new_chain() -> None:
    log = read([(0, 1), (0, 2), (0, 3), None, (1, 1), (0, 3)])
    assert log.latest[KEY] == state(1, 1)
    assert [(r, a.events) for r, a in log.set_aside.items()] == [(OFF_CHAIN, 1)]
    # What seq alone cannot tell: an old seq 2 after the new seq 1 continues the new chain.
    log = read([(0, 1), (0, 2), (0, 3), None, (1, 1), (0, 2)])
    assert log.latest[KEY] == state(0, 2)
    assert log.set_aside == {}


def test_copies_inside_the_new_chain_are_copies_and_a_second_tombstone_starts_over() -> None:
    log = read([(0, 1), None, (1, 1), (1, 2), (1, 1), (1, 2)])
    assert log.latest[KEY] == state(1, 2) and log.set_aside == {}
    read([None, (1, 2)], log=log)  # erased again, then a late copy of the second life
    assert KEY not in log.latest
    assert log.set_aside[BEFORE_SEQ_1].events == 1
    read([(2, 1)], log=log)
    assert log.latest[KEY] == state(2, 1)


def test_a_key_without_a_tombstone_keeps_its_highest_seq_whatever_the_order() -> None:
    log = read([(0, 1), (0, 3), (0, 2), (0, 1)])  # stale copies after newer events: as before
    assert log.latest[KEY] == state(0, 3) and log.set_aside == {}


def test_the_keys_named_per_reason_are_bounded() -> None:
    log: Changelog[RatingState] = Changelog(frozenset())
    for n in range(KEYS_SHOWN + 3):
        read([(0, 1), (0, 2), None, (0, 2), (0, 2)], key=f"p{n}/blitz", log=log)
    aside = log.set_aside[BEFORE_SEQ_1]
    assert aside.events == 2 * (KEYS_SHOWN + 3)
    assert aside.keys == [f"p{n}/blitz" for n in range(KEYS_SHOWN)] and aside.more


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[Entry], list[int]]:
    """A key's records as the workers and `erase` publish them: lives separated by tombstones,
    each a chain from seq 1 in order, with copies of its own earlier events anywhere after them
    (retries, re-publications, a copy delayed beyond the lease). Returns the records and, per
    life, its highest seq (0: none yet)."""
    entries: list[Entry] = []
    highest: list[int] = []
    for chain in range(draw(st.integers(1, 4))):
        if chain:
            entries.append(None)
        seq = 0
        for _ in range(draw(st.integers(0 if chain else 1, 6))):
            if seq and draw(st.booleans()):
                entries.append((chain, draw(st.integers(1, seq))))  # a copy of an earlier event
            else:
                seq += 1
                entries.append((chain, seq))
        highest.append(seq)
    return entries, highest


@settings(max_examples=300, deadline=None)
@given(histories(), st.data())
def test_every_suffix_of_a_valid_history_is_taken_whole(
    history: tuple[list[Entry], list[int]], data: st.DataObject
) -> None:
    # Compaction leaves of a key a suffix of its records: it drops a record only once a later
    # one of that key exists, a tombstone with everything before it, and a last tombstone alone.
    entries, highest = history
    start = data.draw(st.integers(0, len(entries)))
    suffix = entries[start:]
    log = read(suffix)
    assert log.set_aside == {}
    if None in suffix:  # the last life, from seq 1
        expected = state(len(highest) - 1, highest[-1]) if highest[-1] else None
    else:  # no tombstone left: the highest seq among what is left, as for any key
        events = [e for e in suffix if e is not None]
        expected = state(*max(events, key=lambda e: e[1])) if events else None
    assert log.latest.get(KEY) == expected
