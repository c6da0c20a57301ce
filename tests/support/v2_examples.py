"""Contract v2's byte-exact examples, copied from the contract (events-v2, "Examples, byte for
byte"): golden data for the encoder's and the models' tests."""

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
