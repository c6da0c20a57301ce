"""The pure parts of replay-dead-letters: a dead letter's headers split back into the original
record's and the error ones (the reverse of worker.stream.dead_letters.dead_letter_record), and
the selection by kind, partition and offsets; the topics a letter may go back to (tornelo's
tournament topic too) and how the summary names them."""

from collections import Counter

from worker.engine.decoder import BadInput, ErrorKind
from worker.operate.replay_dead_letters import Report, Selection, cut, destinations, input_topics, split_headers
from worker.settings import WorkerSettings
from worker.stream.dead_letters import DeadLetter, Source, dead_letter_record


def letter_headers(
    original: tuple[tuple[str, bytes], ...], kind: ErrorKind, budget: int = 1 << 20
) -> list[tuple[str, bytes]]:
    source = Source("games", 2, 41, b"k", b"{}", headers=original)
    _, _, headers = dead_letter_record(DeadLetter(source, BadInput(kind, "why")), 1000, budget)
    return headers


def test_the_original_headers_come_back_as_they_were() -> None:
    original = (("trace", b"t"), ("error.kind", b"theirs"), ("source.offset", b"7"), ("trace", b"again"))
    restored, errors, renamed = split_headers(letter_headers(original, ErrorKind.INVALID_SCHEMA))
    assert restored == list(original)
    assert renamed == 2  # error.kind and source.offset came back from original.<name>
    assert errors == {
        "error.kind": b"invalid_schema",
        "error.message": b"why",
        "source.topic": b"games",
        "source.partition": b"2",
        "source.offset": b"41",
    }
    assert not cut("invalid_schema", errors)


def test_a_letter_without_error_headers_is_all_original() -> None:
    assert split_headers([("a", b"1")]) == ([("a", b"1")], {}, 0)


def test_a_header_already_named_original_error_kind_is_taken_as_renamed() -> None:
    """The contract's ambiguity: the producer's own `original.error.kind` and a renamed
    `error.kind` make the same dead letter, and both are replayed as `error.kind`."""
    theirs = letter_headers((("original.error.kind", b"x"),), ErrorKind.INVALID_JSON)
    renamed = letter_headers((("error.kind", b"x"),), ErrorKind.INVALID_JSON)
    assert theirs == renamed
    restored, _, count = split_headers(theirs)
    assert (restored, count) == ([("error.kind", b"x")], 1)
    # Names only like an error header's are no error header's: kept as they are, not counted.
    others = (("original.trace", b"t"), ("original.error.kinds", b"k"), ("Original.error.kind", b"o"))
    assert split_headers(letter_headers(others, ErrorKind.INVALID_JSON))[::2] == (list(others), 0)


def test_cut_letters_are_those_too_large_or_truncated() -> None:
    assert cut("too_large", {})
    big = tuple((f"h{i}", b"x" * 200) for i in range(40))
    _, errors, _ = split_headers(letter_headers(big, ErrorKind.INVALID_JSON, budget=4096))
    assert "error.truncated" in errors and cut("invalid_json", errors)


def test_selection_by_kind_partition_and_inclusive_offsets() -> None:
    every = Selection()
    assert every.selects(0, 0, "invalid_json") and every.selects(3, 10**9, "too_large")
    some = Selection(frozenset({"too_large"}), partition=1, from_offset=5, to_offset=9)
    assert some.selects(1, 5, "too_large") and some.selects(1, 9, "too_large")
    assert not some.selects(1, 4, "too_large") and not some.selects(1, 10, "too_large")
    assert not some.selects(0, 6, "too_large") and not some.selects(1, 6, "invalid_json")


def test_only_tornelo_replays_to_its_tournament_topic_beside_the_games() -> None:
    assert input_topics(WorkerSettings(system="tornelo", topic_tournaments="ends")) == (
        "arena.game.finished.v1",
        "ends",
    )
    assert input_topics(WorkerSettings(system="fide", topic_tournaments="ends")) == ("arena.game.finished.v1",)
    assert input_topics(WorkerSettings()) == ("arena.game.finished.v1",)


def test_the_summary_names_the_one_topic_replayed_to_or_each_with_its_count() -> None:
    assert destinations(Report(), "games") == "games"  # nothing to replay
    assert destinations(Report(to=Counter({"ends": 2})), "games") == "ends"
    assert destinations(Report(to=Counter({"games": 3, "ends": 1})), "games") == "games (3), ends (1)"
