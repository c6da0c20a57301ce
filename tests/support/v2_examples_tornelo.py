"""Contract v2's `tornelo` example, copied from the contract (docs/systems/tornelo.md, "State and
events, with an example"), and the other events of the same run written by hand from the contract's
tables (kinds and null fields, `state`, `detail`, encoding) and the example's numbers: golden data for
the engine's and `rate`'s tests (their example 18).

The run: A (1800) and B (2000) seeded in rapid with 40 games each; game `g1` (15+0, input
`event_id` `e-g1`, `finished_at` `2026-11-10T12:00:00Z`, `tournament_id` `T1`), A (white) wins;
T1 ends."""

# The contract's two lines, key `A/rapid` both times: A's period_game, then A's close.
CONTRACT_TORNELO = [
    (
        b'{"event_id":"g1/A","system":"tornelo","game_id":"g1","source_event_id":"e-g1","player_id":"A",'
        b'"opponent_id":"B","category":"rapid","kind":"period_game","score":1,"rating_before":1800.00,'
        b'"rating_after":1800.00,"display_before":1800,"display_after":1800,"delta":0.00,"seq":2,'
        b'"state":{"rating":1800.00,"rated_games":40,"seq":2,"k_modifier":1.00,"performance_sum":null,'
        b'"pending":[{"tournament_id":"T1","games":1,"points":1.00,"expected":0.240253,"performance_games":1,'
        b'"performance_points":1.00,"performance_sum":2400}]},"finished_at":"2026-11-10T12:00:00Z",'
        b'"detail":{"tournament_id":"T1","games":null,"points":null,"expected":0.240253,"k_factor":null,'
        b'"k_modifier":null}}'
    ),
    (
        b'{"event_id":"period/T1/A/rapid","system":"tornelo","game_id":null,"source_event_id":null,'
        b'"player_id":"A","opponent_id":null,"category":"rapid","kind":"period_rating","score":null,'
        b'"rating_before":1800.00,"rating_after":1815.00,"display_before":1800,"display_after":1815,"delta":15.00,'
        b'"seq":3,"state":{"rating":1815.00,"rated_games":41,"seq":3,"k_modifier":1.00,"performance_sum":null,'
        b'"pending":[]},"finished_at":null,"detail":{"tournament_id":"T1","games":1,"points":1.00,'
        b'"expected":0.240253,"k_factor":20,"k_modifier":1.00}}'
    ),
]

# Written by hand. The seeding rows' `imported` events (kind `imported`: rating_before null for a
# rating never seen, display_before the training rating 1200, `detail` all null; an established
# rating's performance_sum is null).
A_IMPORTED = (
    b'{"event_id":"import/A/rapid/1","system":"tornelo","game_id":null,"source_event_id":null,"player_id":"A",'
    b'"opponent_id":null,"category":"rapid","kind":"imported","score":null,"rating_before":null,'
    b'"rating_after":1800.00,"display_before":1200,"display_after":1800,"delta":null,"seq":1,'
    b'"state":{"rating":1800.00,"rated_games":40,"seq":1,"k_modifier":1.00,"performance_sum":null,"pending":[]},'
    b'"finished_at":null,"detail":{"tournament_id":null,"games":null,"points":null,"expected":null,'
    b'"k_factor":null,"k_modifier":null}}'
)
B_IMPORTED = (
    b'{"event_id":"import/B/rapid/1","system":"tornelo","game_id":null,"source_event_id":null,"player_id":"B",'
    b'"opponent_id":null,"category":"rapid","kind":"imported","score":null,"rating_before":null,'
    b'"rating_after":2000.00,"display_before":1200,"display_after":2000,"delta":null,"seq":1,'
    b'"state":{"rating":2000.00,"rated_games":40,"seq":1,"k_modifier":1.00,"performance_sum":null,"pending":[]},'
    b'"finished_at":null,"detail":{"tournament_id":null,"games":null,"points":null,"expected":null,'
    b'"k_factor":null,"k_modifier":null}}'
)
# B's period_game: E(2000, 1800) = 0.759747 (1 - A's 0.240253), score 0, performance 1800 - 400.
B_G1 = (
    b'{"event_id":"g1/B","system":"tornelo","game_id":"g1","source_event_id":"e-g1","player_id":"B",'
    b'"opponent_id":"A","category":"rapid","kind":"period_game","score":0,"rating_before":2000.00,'
    b'"rating_after":2000.00,"display_before":2000,"display_after":2000,"delta":0.00,"seq":2,'
    b'"state":{"rating":2000.00,"rated_games":40,"seq":2,"k_modifier":1.00,"performance_sum":null,'
    b'"pending":[{"tournament_id":"T1","games":1,"points":0.00,"expected":0.759747,"performance_games":1,'
    b'"performance_points":0.00,"performance_sum":1400}]},"finished_at":"2026-11-10T12:00:00Z",'
    b'"detail":{"tournament_id":"T1","games":null,"points":null,"expected":0.759747,"k_factor":null,'
    b'"k_modifier":null}}'
)
# B's close: (0 - 0.759747) x 20 = -15.19 -> -15.
B_CLOSE = (
    b'{"event_id":"period/T1/B/rapid","system":"tornelo","game_id":null,"source_event_id":null,'
    b'"player_id":"B","opponent_id":null,"category":"rapid","kind":"period_rating","score":null,'
    b'"rating_before":2000.00,"rating_after":1985.00,"display_before":2000,"display_after":1985,"delta":-15.00,'
    b'"seq":3,"state":{"rating":1985.00,"rated_games":41,"seq":3,"k_modifier":1.00,"performance_sum":null,'
    b'"pending":[]},"finished_at":null,"detail":{"tournament_id":"T1","games":1,"points":0.00,'
    b'"expected":0.759747,"k_factor":20,"k_modifier":1.00}}'
)
