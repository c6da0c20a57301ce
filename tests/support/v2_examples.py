"""Contract v2's byte-exact examples, copied from the contract (the "State and events, with an example"
of docs/systems/uscf-cc.md and of docs/systems/glicko2.md): golden data for the encoder's and the
models' tests."""

# uscf-cc: alice (1600.00, 40 credits) and bob (1400.00, 10) seeded, then g1 (ev-1), alice wins.
CONTRACT_USCF_CC = [
    b'{"event_id":"import/alice/correspondence/1","system":"uscf-cc","game_id":null,"source_event_id":null,'
    b'"player_id":"alice","opponent_id":null,"category":"correspondence","kind":"imported","score":null,'
    b'"rating_before":null,"rating_after":1600.00,"display_before":1200,"display_after":1600,"delta":null,'
    b'"seq":1,"state":{"rating":1600.00,"rated_games":40,"seq":1},"finished_at":null,"detail":{"k_factor":null}}',
    b'{"event_id":"g1/alice","system":"uscf-cc","game_id":"g1","source_event_id":"ev-1","player_id":"alice",'
    b'"opponent_id":"bob","category":"correspondence","kind":"rated_game","score":1,"rating_before":1600.00,'
    b'"rating_after":1608.00,"display_before":1600,"display_after":1608,"delta":8.00,"seq":2,'
    b'"state":{"rating":1608.00,"rated_games":41,"seq":2},"finished_at":"2026-11-29T12:00:00Z",'
    b'"detail":{"k_factor":16}}',
    b'{"event_id":"g1/bob","system":"uscf-cc","game_id":"g1","source_event_id":"ev-1","player_id":"bob",'
    b'"opponent_id":"alice","category":"correspondence","kind":"rated_game","score":0,"rating_before":1400.00,'
    b'"rating_after":1381.82,"display_before":1400,"display_after":1382,"delta":-18.18,"seq":2,'
    b'"state":{"rating":1381.82,"rated_games":11,"seq":2},"finished_at":"2026-11-29T12:00:00Z",'
    b'"detail":{"k_factor":null}}',
]

# glicko2: carol seeded in blitz (2100.00, 120 games, RD 60.00, sigma 0.06); then g1 (3+0, ev-1,
# 2026-11-29T12:00:00Z) between two new players, alice (white) wins: carol's import, alice's event.
CONTRACT_GLICKO2 = [
    b'{"event_id":"import/carol/blitz/1","system":"glicko2","game_id":null,"source_event_id":null,'
    b'"player_id":"carol","opponent_id":null,"category":"blitz","kind":"imported","score":null,'
    b'"rating_before":null,"rating_after":2100.00,"display_before":1500,"display_after":2100,"delta":null,'
    b'"seq":1,"state":{"rating":2100.00,"rated_games":120,"seq":1,"deviation":60.00,"volatility":0.060000000,'
    b'"last_rated_at":null},"finished_at":null,"detail":{"expected_score":null,"deviation_before":null,'
    b'"deviation_after":60.00,"volatility_before":null,"volatility_after":0.060000000}}',
    b'{"event_id":"g1/alice","system":"glicko2","game_id":"g1","source_event_id":"ev-1","player_id":"alice",'
    b'"opponent_id":"bob","category":"blitz","kind":"rated_game","score":1,"rating_before":1500.00,'
    b'"rating_after":1737.14,"display_before":1500,"display_after":1737,"delta":237.14,"seq":1,'
    b'"state":{"rating":1737.14,"rated_games":1,"seq":1,"deviation":396.71,"volatility":0.089998199,'
    b'"last_rated_at":"2026-11-29T12:00:00Z"},"finished_at":"2026-11-29T12:00:00Z",'
    b'"detail":{"expected_score":0.51,"deviation_before":500.00,"deviation_after":396.71,'
    b'"volatility_before":0.090000000,"volatility_after":0.089998199}}',
]
