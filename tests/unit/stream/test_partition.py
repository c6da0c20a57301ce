"""The publisher's partition of a key is the one Kafka's default partitioner gives it: its own
murmur2 (words read at once) against aiokafka's (the Java client's, byte by byte)."""

from aiokafka.partitioner import DefaultPartitioner, murmur2
from hypothesis import given
from hypothesis import strategies as st

from worker.stream import publisher


@given(st.binary(max_size=200))
def test_murmur2_is_kafkas(key: bytes) -> None:
    assert publisher.murmur2(key) == murmur2(key)


@given(st.binary(min_size=1, max_size=64), st.integers(min_value=1, max_value=300))
def test_a_keys_partition_is_the_default_partitioners(key: bytes, count: int) -> None:
    partitions = list(range(count))
    assert publisher.partition_of(key, partitions) == DefaultPartitioner()(key, partitions, partitions)


def test_every_tail_length_and_the_empty_key() -> None:
    keys = [b"", b"a", b"ab", b"abc", b"abcd", b"abcde", b"p000123/blitz", bytes(range(256))]
    assert [publisher.murmur2(k) for k in keys] == [murmur2(k) for k in keys]
