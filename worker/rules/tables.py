"""FIDE's conversion tables 8.1a (Table A) and 8.1b (Table B), as printed in the arena's rules.

Table A maps a fractional score p to a rating difference dp (whole points); Table B maps a
rating difference D (whole points) to the scoring probability PD of the higher-rated player
(in hundredths; the lower-rated player's is 1.00 - H).
"""

from bisect import bisect_left

from worker.rules.hundredths import ONE, Hundredths, Points

# p in hundredths (0 .. 100) -> dp in whole points. Copied from the seed, column by column.
TABLE_A: dict[int, int] = {
    100: 800,
    99: 677,
    98: 589,
    97: 538,
    96: 501,
    95: 470,
    94: 444,
    93: 422,
    92: 401,
    91: 383,
    90: 366,
    89: 351,
    88: 336,
    87: 322,
    86: 309,
    85: 296,
    84: 284,
    83: 273,
    82: 262,
    81: 251,
    80: 240,
    79: 230,
    78: 220,
    77: 211,
    76: 202,
    75: 193,
    74: 184,
    73: 175,
    72: 166,
    71: 158,
    70: 149,
    69: 141,
    68: 133,
    67: 125,
    66: 117,
    65: 110,
    64: 102,
    63: 95,
    62: 87,
    61: 80,
    60: 72,
    59: 65,
    58: 57,
    57: 50,
    56: 43,
    55: 36,
    54: 29,
    53: 21,
    52: 14,
    51: 7,
    50: 0,
    49: -7,
    48: -14,
    47: -21,
    46: -29,
    45: -36,
    44: -43,
    43: -50,
    42: -57,
    41: -65,
    40: -72,
    39: -80,
    38: -87,
    37: -95,
    36: -102,
    35: -110,
    34: -117,
    33: -125,
    32: -133,
    31: -141,
    30: -149,
    29: -158,
    28: -166,
    27: -175,
    26: -184,
    25: -193,
    24: -202,
    23: -211,
    22: -220,
    21: -230,
    20: -240,
    19: -251,
    18: -262,
    17: -273,
    16: -284,
    15: -296,
    14: -309,
    13: -322,
    12: -336,
    11: -351,
    10: -366,
    9: -383,
    8: -401,
    7: -422,
    6: -444,
    5: -470,
    4: -501,
    3: -538,
    2: -589,
    1: -677,
    0: -800,
}

# Table B as (largest D of the bin, PD of the higher-rated player in hundredths); D above
# the last bin (> 735) gives 1.00.
_TABLE_B_BINS: tuple[tuple[int, int], ...] = (
    (3, 50),
    (10, 51),
    (17, 52),
    (25, 53),
    (32, 54),
    (39, 55),
    (46, 56),
    (53, 57),
    (61, 58),
    (68, 59),
    (76, 60),
    (83, 61),
    (91, 62),
    (98, 63),
    (106, 64),
    (113, 65),
    (121, 66),
    (129, 67),
    (137, 68),
    (145, 69),
    (153, 70),
    (162, 71),
    (170, 72),
    (179, 73),
    (188, 74),
    (197, 75),
    (206, 76),
    (215, 77),
    (225, 78),
    (235, 79),
    (245, 80),
    (256, 81),
    (267, 82),
    (278, 83),
    (290, 84),
    (302, 85),
    (315, 86),
    (328, 87),
    (344, 88),
    (357, 89),
    (374, 90),
    (391, 91),
    (411, 92),
    (432, 93),
    (456, 94),
    (484, 95),
    (517, 96),
    (559, 97),
    (619, 98),
    (735, 99),
)
_B_UPPER = tuple(upper for upper, _ in _TABLE_B_BINS)
_B_HIGH = tuple(high for _, high in _TABLE_B_BINS)


def dp_for(p: Hundredths) -> Points:
    """Table A: the rating difference dp (whole points) for a fractional score p in hundredths."""
    try:
        return Points(TABLE_A[p])
    except KeyError:
        raise ValueError(f"p must be a whole number of hundredths in 0..100, got {p}") from None


def pd_higher(d: Points) -> Hundredths:
    """Table B: PD of the higher-rated player, in hundredths, for a difference D in whole points."""
    if d < 0:
        raise ValueError(f"D must be >= 0, got {d}")
    i = bisect_left(_B_UPPER, d)
    return Hundredths(_B_HIGH[i]) if i < len(_B_HIGH) else ONE
