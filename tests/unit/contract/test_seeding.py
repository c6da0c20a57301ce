"""Seeding rows, for every rating system (tests/support/contract_systems.py), taken and refused as
docs/contract.md says ("Seeding established ratings"), each system's page (docs/systems/,
"Seeding rows") and docs/contract-v2.md ("Order" of the per-period systems): a file is taken
whole or refused whole; a row over a rating never seen is imported (an `imported` event, the
next `seq`, no `rating_before`); a row equal to the state is skipped; a row over a rating with
state is refused unless forced, and a per-period system's rating still holding games of a closed
period (or where the system says) is refused forced or not. The row `switch-over` makes of a
state (`row_of`) imports that state whole."""

import dataclasses
import io
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.contract_systems import SYSTEMS, SystemParts
from tests.support.ratings import Ratings
from worker.engine.engine import SeedVerdict
from worker.engine.seed_rows import SeedFileError, parse_seed_rows
from worker.rules.hundredths import Hundredths
from worker.rules.interface import Kind, SeedRow

every_system = pytest.mark.parametrize("system", SYSTEMS, ids=str)


def seed_file(system: SystemParts[Any], seed: int = 7) -> str:
    """The system's traffic generator's seeding file: 30 players, most of them established."""
    return system.simulation(30, seed=seed, established_share=0.8).seed_csv()


@every_system
def test_the_seeding_file_is_taken_whole_and_each_row_imported_then_skipped_then_refused(
    system: SystemParts[Any],
) -> None:
    rows = parse_seed_rows("seed.csv", io.StringIO(seed_file(system)), system.rules)
    assert len(rows) > 10
    store = Ratings(system.new_engine())
    for row in rows:
        outcome = store.seed(row)
        assert outcome.verdict is SeedVerdict.IMPORTED
        assert outcome.update is not None
        event = outcome.update.event
        assert (event.kind, event.event_id) == (Kind.IMPORTED, f"import/{row.player_id}/{row.category}/1")
        assert (event.rating_before, event.rating_after) == (None, row.rating)
        assert outcome.update.state == system.rules.numbered(system.rules.seeded(row, system.rules.unseen), 1)
    states = dict(store.states)
    # The same file again: every row equal to its state, skipped; nothing changes.
    for row in rows:
        assert store.seed(row).verdict is SeedVerdict.UNCHANGED
        assert store.seed(row, force=True).verdict is SeedVerdict.UNCHANGED
    assert store.states == states
    # Another rating over a rating with state: refused, unless forced.
    for row in rows:
        assert row.rating is not None
        other = dataclasses.replace(row, rating=Hundredths(row.rating + 100))
        assert store.seed(other).verdict is SeedVerdict.REFUSED
        assert store.state(row.key) == states[row.key]
        forced = store.seed(other, force=True)
        assert forced.verdict is SeedVerdict.IMPORTED
        assert forced.update is not None
        assert forced.update.state.seq == 2
        assert (forced.update.event.rating_before, forced.update.event.rating_after) == (row.rating, other.rating)


def refused(system: SystemParts[Any], text: str) -> str:
    with pytest.raises(SeedFileError) as refusal:
        parse_seed_rows("seed.csv", io.StringIO(text), system.rules)
    return str(refusal.value)


@every_system
def test_a_seeding_file_with_a_bad_header_a_bad_row_or_a_rating_twice_is_refused_whole(
    system: SystemParts[Any],
) -> None:
    header, first, *rest = seed_file(system).splitlines()
    assert "the header must be" in refused(system, "\n".join([header + ",more", first, *rest]))
    assert "seed.csv:2:" in refused(system, "\n".join([header, first.rsplit(",", 1)[0], *rest]))
    assert "seeded twice (first on line 2)" in refused(system, "\n".join([header, first, *rest, first]))
    # A file of every other system: its header or its rows are not this system's.
    for other in SYSTEMS:
        if other.name != system.name:
            refused(system, seed_file(other))


@every_system
@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_row_of_a_state_imports_it_whole_and_over_it_is_skipped_and_anothers_refused_unless_forced(
    system: SystemParts[Any], data: st.DataObject
) -> None:
    stream = data.draw(system.streams(True))
    _, store = system.replayer.replay(stream, data.draw(system.takes(stream)))
    rows: dict[str, SeedRow] = {}
    for key, state in store.states.items():
        player, category = key.split("/")
        row = system.rules.row_of(player, category, state)
        if row is not None:  # the arena's contract imports no unrated state
            rows[key] = row
    rules, engine, periods = system.rules, store.engine, store.engine.periods
    for key, row in rows.items():
        state = store.state(key)
        # `switch-over`'s row of a state, over a rating never seen: that state, numbered 1.
        fresh = engine.seed(row, rules.unseen)
        assert fresh.verdict is SeedVerdict.IMPORTED
        assert fresh.update is not None and fresh.update.state == rules.numbered(state, 1)
        # Over the state itself: equal to it, skipped (forced or not).
        assert engine.seed(row, state, False, store.calendar).verdict is SeedVerdict.UNCHANGED
        assert engine.seed(row, state, True, store.calendar).verdict is SeedVerdict.UNCHANGED
        # Another rating's row over it: refused unless forced; a per-period system's rating with
        # games of a closed period, or one its system does not let be seeded, even forced.
        other_key = data.draw(st.sampled_from(sorted(rows)))
        other = dataclasses.replace(rows[other_key], player_id=row.player_id, category=row.category)
        if rules.seeded(other, state) == state:
            continue  # the same values: skipped, as above
        assert engine.seed(other, state, False, store.calendar).verdict is SeedVerdict.REFUSED
        blocked = periods is not None and (bool(periods.closing(state, store.calendar)) or not periods.seedable(state))
        forced = engine.seed(other, state, True, store.calendar)
        assert forced.verdict is (SeedVerdict.REFUSED if blocked else SeedVerdict.IMPORTED)
        if forced.update is not None:
            assert forced.update.state == rules.numbered(rules.seeded(other, state), state.seq + 1)
            assert forced.update.event.rating_before == state.rating
