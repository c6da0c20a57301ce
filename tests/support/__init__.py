"""Support code the tests share: harnesses, fixtures' helpers, the contract's values."""
