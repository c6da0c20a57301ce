"""Every Redis key the worker uses, in one place (documented in the README, "Redis layout").

`{prefix}` is RATING_REDIS_KEY_PREFIX; `{rating}` is `{player_id}/{category}`. Ids cannot
contain ":" or "/", so no key of one kind can collide with another or with another rating.
"""

STATE = "s:"  # {prefix}s:{rating} -> the rating's state (string, see worker.state_codec)
OUTBOX = "o:"  # {prefix}o:{rating} -> list of encoded events written but not yet acknowledged by Kafka
LEASE = "l:"  # {prefix}l:{rating} -> the token of the process allowed to flush that outbox (expires)
GAME = "g:"  # {prefix}g:{game_id} -> the game's facts digest (hex), expires after the retention


def state_key(prefix: str, rating: str) -> str:
    return f"{prefix}{STATE}{rating}"


def outbox_key(prefix: str, rating: str) -> str:
    return f"{prefix}{OUTBOX}{rating}"


def lease_key(prefix: str, rating: str) -> str:
    return f"{prefix}{LEASE}{rating}"


def game_key(prefix: str, game_id: str) -> str:
    return f"{prefix}{GAME}{game_id}"
