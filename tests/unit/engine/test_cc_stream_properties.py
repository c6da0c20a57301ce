"""`uscf-cc`'s own invariants (US Chess correspondence) through the one engine, for any stream of
games and seeding rows (hypothesis), checked on the engine's output and on the states it keeps
(docs/systems/uscf-cc.md, "Rules and readings"): a game changes at most its two players, a special forfeit only
its winner.

What holds for every system (a replay twice gives the same bytes, a redelivery changes nothing,
`seq` gapless, events valid and read back as `restore` reads them, the state's Redis encoding) is
the contract suite's (tests/unit/contract/), over these streams too (tests/support/cc_streams.py)."""

from typing import Any

from hypothesis import given, settings

from schemas.correspondence_game import CorrespondenceGameFinished
from tests.support.cc_streams import CATEGORY, game_values, parse, seeds
from tests.support.ratings import Ratings
from worker.engine.engine import Engine, Verdict
from worker.rules.hundredths import Points
from worker.rules.interface import SeedRow
from worker.systems.registry import USCF_CC
from worker.systems.uscf_cc.rules import CcState


def new_store() -> Ratings[CcState]:
    return Ratings(Engine(USCF_CC, Points(1200)))


def is_special_forfeit(game: CorrespondenceGameFinished) -> bool:
    return game.termination == "forfeit" and game.forfeit_kind == "special"


@settings(max_examples=200, deadline=None)
@given(seeds, game_values())
def test_a_game_changes_at_most_its_two_players_and_a_special_forfeit_only_its_winner(
    seed_rows: list[SeedRow], values: list[dict[str, Any]]
) -> None:
    store = new_store()
    for row in seed_rows:
        store.seed(row)
    for game in map(parse, values):
        before = dict(store.states)
        outcome = store.apply(game)
        changed = {k for k in store.states if store.states[k] != before.get(k)}
        assert changed == {u.key for u in outcome.updates}
        players = {f"{game.white_id}/{CATEGORY}", f"{game.black_id}/{CATEGORY}"}
        assert changed <= players
        if outcome.verdict is not Verdict.APPLIED:
            assert not changed
        if not game.rated or game.termination == "aborted":
            assert outcome.verdict is Verdict.SKIPPED and not changed  # section 4, steps 3 and 4
        elif is_special_forfeit(game):
            winner = game.white_id if game.result == "1-0" else game.black_id
            winner_key = f"{winner}/{CATEGORY}"
            assert changed <= {winner_key}
            if changed:  # the forfeit points, no game credit (section 8)
                assert store.states[winner_key].credits == before[winner_key].credits
        else:
            # Every other game is rated, an ordinary forfeit included: both players change (section 9).
            assert outcome.verdict is Verdict.APPLIED and changed == players
