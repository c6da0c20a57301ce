"""The local stack for the demo, the tests and the benchmarks: a broker, a Redis, traffic."""
