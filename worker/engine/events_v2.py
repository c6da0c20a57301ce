"""What every event of contract v2 (`arena.rating.changed.v2.{system}`) shares, byte for byte:
compact UTF-8 JSON, keys in the contract's order, ratings, deltas and expected scores with exactly
two decimals (a negative one with a leading `-`), integers as integers. `head` writes the fields
every v2 event has; each system's package writes its `state` and `detail` after it
(`worker.systems.<name>.events`). An event is encoded once; a re-publication sends the stored bytes.

The events are the engine's (`worker.engine.events.RatingEvent`), as for every system; the
arena's are encoded as contract v1 (`worker.systems.arena.events`), which never changes.
"""

from decimal import Decimal
from json.encoder import encode_basestring  # C-accelerated; keeps non-ASCII as UTF-8
from typing import Any

from worker.engine.events import RatingEvent
from worker.rules.hundredths import Hundredths, format_fixed2

SCORES = {100: "1", 50: "0.5", 0: "0"}  # a score as the contract writes it


SCORES = {100: "1", 50: "0.5", 0: "0"}  # a score as the contract writes it


def fixed2(value: Hundredths | None) -> str:
    return "null" if value is None else format_fixed2(value)


def quoted(value: str | None) -> str:
    """An id or a validated timestamp: their characters never need escaping."""
    return "null" if value is None else f'"{value}"'


def head(event: RatingEvent[Any], system: str) -> str:
    """The fields every v2 event has, from `event_id` to `seq` (`state` and `detail` follow)."""
    # The hot path of every event: unpacked once (a named tuple's fields are properties), and each
    # number formatted once (a recorded game's rating_before and rating_after are the same).
    (event_id, game_id, source, player_id, opponent_id, category, kind, score, before, after) = event[:10]
    if before is None:
        rating_before = delta = "null"
        rating_after = "null" if after is None else format_fixed2(after)
    elif after is None:
        rating_before, rating_after, delta = format_fixed2(before), "null", "null"
    else:
        rating_before = format_fixed2(before)
        rating_after = rating_before if after == before else format_fixed2(after)
        delta = format_fixed2(Hundredths(after - before))
    game = "null" if game_id is None else '"' + game_id + '"'
    opponent = "null" if opponent_id is None else '"' + opponent_id + '"'
    return (
        f'{{"event_id":"{event_id}","system":"{system}","game_id":{game},'
        f'"source_event_id":{"null" if source is None else encode_basestring(source)},"player_id":"{player_id}",'
        f'"opponent_id":{opponent},'
        f'"category":"{category}","kind":"{kind}","score":{"null" if score is None else SCORES[score]},'
        f'"rating_before":{rating_before},"rating_after":{rating_after},'
        f'"display_before":{event.display_before},"display_after":{event.display_after},"delta":{delta},'
        f'"seq":{event.state.seq}'
    )


def hundredths_of(value: Decimal | None) -> Hundredths | None:
    """A read two-decimal number in hundredths (None stays None)."""
    return None if value is None else Hundredths(int(value * 100))


def integer(value: int | None) -> str:
    return "null" if value is None else str(value)


def hundredths(value: Decimal) -> Hundredths:
    return Hundredths(int(value * 100))  # a Decimal with at most two decimals
