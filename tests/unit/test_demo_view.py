"""The demo's view counts the workers' output, not the seeding that came before it."""

import json

from worker.embedded.demo import View


def event(kind: str, player: str, seq: int) -> bytes:
    return json.dumps(
        {
            "kind": kind,
            "player_id": player,
            "category": "blitz",
            "state": {"status": "rated"},
            "display_before": 1500,
            "display_after": 1510,
            "delta": 10.0,
            "opponent_id": "p2" if kind != "imported" else None,
            "seq": seq,
        }
    ).encode()


def test_imported_events_are_seeding_not_output() -> None:
    view = View()
    view.add(event("imported", "p1", 1))
    view.add(event("imported", "p2", 1))
    assert (view.seeded, view.events, dict(view.kinds)) == (2, 0, {})
    view.add(event("rated_game", "p1", 2))
    assert (view.seeded, view.events, dict(view.kinds)) == (2, 1, {"rated_game": 1})
    assert view.top("blitz") == [("p1", 1510), ("p2", 1510)]
