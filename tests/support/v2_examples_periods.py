"""Contract v2's byte-exact examples of the per-period systems (docs/systems/fide.md, "State and events,
with an example"): `CONTRACT_FIDE` and the held form of its `period_game` are copied from the contract;
golden data for the engine's and `rate`'s tests. The events of the same example that the contract does
not print (the two imports, B's events) are written by hand from its tables, apart."""

# fide: A (2000) and B (1900) seeded in blitz with 40 games each; October 2026 closed (no games);
# g1 (3+0, e-g1, 2026-11-10T12:00:00Z), A (white) wins; November closes. A's period_game (counted
# at once), then A's close.
CONTRACT_FIDE = [
    b'{"event_id":"g1/A","system":"fide","game_id":"g1","source_event_id":"e-g1","player_id":"A",'
    b'"opponent_id":"B","category":"blitz","kind":"period_game","score":1,"rating_before":2000.00,'
    b'"rating_after":2000.00,"display_before":2000,"display_after":2000,"delta":0.00,"seq":2,'
    b'"state":{"rating":2000.00,"rated_games":40,"seq":2,"reached_2400":false,"birth_year":null,'
    b'"closed_period":null,"rating_before_close":null,"pending":[{"period":"2026-11","games":1,"points":1.00,'
    b'"expected":0.64,"ratings":1900.00,"held":[]}],"initial":[]},"finished_at":"2026-11-10T12:00:00Z",'
    b'"detail":{"period":"2026-11","games":null,"points":null,"expected":null,"k_factor":null}}',
    b'{"event_id":"period/2026-11/A/blitz","system":"fide","game_id":null,"source_event_id":null,'
    b'"player_id":"A","opponent_id":null,"category":"blitz","kind":"period_rating","score":null,'
    b'"rating_before":2000.00,"rating_after":2007.00,"display_before":2000,"display_after":2007,"delta":7.00,'
    b'"seq":3,"state":{"rating":2007.00,"rated_games":41,"seq":3,"reached_2400":false,"birth_year":null,'
    b'"closed_period":"2026-11","rating_before_close":2000.00,"pending":[],"initial":[]},"finished_at":null,'
    b'"detail":{"period":"2026-11","games":1,"points":1.00,"expected":0.64,"k_factor":20}}',
]
# The contract's text under the example: without October's close the game is held, and A's
# period_game has this `pending` instead (its close event is the same).
FIDE_COUNTED_PENDING = (
    b'"pending":[{"period":"2026-11","games":1,"points":1.00,"expected":0.64,"ratings":1900.00,"held":[]}]'
)
FIDE_HELD_PENDING = (
    b'"pending":[{"period":"2026-11","games":0,"points":0.00,"expected":0.00,"ratings":0.00,'
    b'"held":[{"opponent_id":"B","score":1}]}]'
)

# --- Written by hand from the contract's tables (not printed by the contract): the rest of the
# same example. The seeding rows' imports (rating_before null, display_before the training
# rating 1200, detail all null); B's period_game (score 0, PD .36 against 2000); B's close
# (-.36 x 20 = -7.2 -> -7: 1893).
FIDE_IMPORT_A = (
    b'{"event_id":"import/A/blitz/1","system":"fide","game_id":null,"source_event_id":null,"player_id":"A",'
    b'"opponent_id":null,"category":"blitz","kind":"imported","score":null,"rating_before":null,'
    b'"rating_after":2000.00,"display_before":1200,"display_after":2000,"delta":null,"seq":1,'
    b'"state":{"rating":2000.00,"rated_games":40,"seq":1,"reached_2400":false,"birth_year":null,'
    b'"closed_period":null,"rating_before_close":null,"pending":[],"initial":[]},"finished_at":null,'
    b'"detail":{"period":null,"games":null,"points":null,"expected":null,"k_factor":null}}'
)
FIDE_IMPORT_B = (
    b'{"event_id":"import/B/blitz/1","system":"fide","game_id":null,"source_event_id":null,"player_id":"B",'
    b'"opponent_id":null,"category":"blitz","kind":"imported","score":null,"rating_before":null,'
    b'"rating_after":1900.00,"display_before":1200,"display_after":1900,"delta":null,"seq":1,'
    b'"state":{"rating":1900.00,"rated_games":40,"seq":1,"reached_2400":false,"birth_year":null,'
    b'"closed_period":null,"rating_before_close":null,"pending":[],"initial":[]},"finished_at":null,'
    b'"detail":{"period":null,"games":null,"points":null,"expected":null,"k_factor":null}}'
)
FIDE_GAME_B = (
    b'{"event_id":"g1/B","system":"fide","game_id":"g1","source_event_id":"e-g1","player_id":"B",'
    b'"opponent_id":"A","category":"blitz","kind":"period_game","score":0,"rating_before":1900.00,'
    b'"rating_after":1900.00,"display_before":1900,"display_after":1900,"delta":0.00,"seq":2,'
    b'"state":{"rating":1900.00,"rated_games":40,"seq":2,"reached_2400":false,"birth_year":null,'
    b'"closed_period":null,"rating_before_close":null,"pending":[{"period":"2026-11","games":1,"points":0.00,'
    b'"expected":0.36,"ratings":2000.00,"held":[]}],"initial":[]},"finished_at":"2026-11-10T12:00:00Z",'
    b'"detail":{"period":"2026-11","games":null,"points":null,"expected":null,"k_factor":null}}'
)
# B's period_game when the game is held (October not closed): the same, with its game held.
FIDE_GAME_B_HELD_PENDING = (
    b'"pending":[{"period":"2026-11","games":0,"points":0.00,"expected":0.00,"ratings":0.00,'
    b'"held":[{"opponent_id":"A","score":0}]}]'
)
FIDE_CLOSE_B = (
    b'{"event_id":"period/2026-11/B/blitz","system":"fide","game_id":null,"source_event_id":null,'
    b'"player_id":"B","opponent_id":null,"category":"blitz","kind":"period_rating","score":null,'
    b'"rating_before":1900.00,"rating_after":1893.00,"display_before":1900,"display_after":1893,"delta":-7.00,'
    b'"seq":3,"state":{"rating":1893.00,"rated_games":41,"seq":3,"reached_2400":false,"birth_year":null,'
    b'"closed_period":"2026-11","rating_before_close":1900.00,"pending":[],"initial":[]},"finished_at":null,'
    b'"detail":{"period":"2026-11","games":1,"points":0.00,"expected":0.36,"k_factor":20}}'
)
