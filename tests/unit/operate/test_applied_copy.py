"""The rules that tell, of a game's copies, the one the workers applied (`worker.operate.applied_copy`):
the output's `source_event_id`, then the live record's digest, then the lowest offset in a
partition, the earliest timestamp across partitions, the lowest partition."""

from worker.operate.applied_copy import Copy, choose, first_arrived

A_FACTS, B_FACTS = b"\x01" * 8, b"\x02" * 8


def copy(partition: int, offset: int, timestamp: int, event_id: str = "e", digest: bytes = A_FACTS) -> Copy:
    return Copy(partition, offset, timestamp, event_id, digest)


def test_in_one_partition_the_lowest_offset_is_first_whatever_its_timestamp() -> None:
    later_offset_earlier_time = copy(0, 7, 1_000)
    assert first_arrived([copy(0, 3, 5_000), later_offset_earlier_time]) == copy(0, 3, 5_000)


def test_across_partitions_the_earliest_timestamp_then_the_lowest_partition_is_first() -> None:
    assert first_arrived([copy(0, 9, 2_000), copy(1, 0, 1_999)]) == copy(1, 0, 1_999)
    assert first_arrived([copy(2, 0, 2_000), copy(1, 5, 2_000)]) == copy(1, 5, 2_000)
    # Each partition's lowest offset competes, not its earliest record.
    assert first_arrived([copy(0, 1, 3_000), copy(0, 2, 1_000), copy(1, 0, 2_000)]) == copy(1, 0, 2_000)


def test_the_output_decides_first() -> None:
    first, named = copy(0, 0, 1_000, "e-B", B_FACTS), copy(1, 0, 2_000, "e-A", A_FACTS)
    # Over the record (whose facts here are B's) and over the arrival.
    assert choose([first, named], {"e-A"}, B_FACTS) == (named, "output")


def test_the_record_decides_when_the_output_names_no_copy() -> None:
    first, recorded = copy(0, 0, 1_000, "e-B", B_FACTS), copy(1, 0, 2_000, "e-A", A_FACTS)
    assert choose([first, recorded], {"e-other"}, A_FACTS) == (recorded, "record")


def test_the_arrival_decides_among_what_the_output_and_the_record_leave() -> None:
    # Two copies of the facts the record holds (another finished_at), one of other facts.
    early, late, other = copy(1, 4, 1_000, "e-1"), copy(0, 2, 3_000, "e-2"), copy(0, 0, 500, "e-3", B_FACTS)
    assert choose([other, late, early], (), A_FACTS) == (early, "arrival")
    # Both named by the output (one event id on two copies): the record and the arrival go on.
    assert choose([other, late, early], {"e-1", "e-2"}, A_FACTS) == (early, "arrival")


def test_a_record_restored_without_facts_or_matching_no_copy_decides_nothing() -> None:
    first, second = copy(0, 0, 1_000, "e-B", B_FACTS), copy(0, 1, 2_000, "e-A", A_FACTS)
    assert choose([first, second], (), b"") == (first, "arrival")  # RESTORED
    assert choose([first, second], (), b"\x03" * 8) == (first, "arrival")
    assert choose([first, second], (), None) == (first, "arrival")
