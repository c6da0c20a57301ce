"""The pure core: a game or a seeding row in, states and events out. No I/O, no clock."""
