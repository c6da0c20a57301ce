"""Tables A and B against the seed document's printed tables (typed in here, never read from the code)."""

from itertools import pairwise

import pytest

from worker.rules.hundredths import Hundredths, Points
from worker.rules.tables import dp_for, pd_higher
from worker.systems.arena.rules import expected_scores

# Table A exactly as printed in the seed (premium-chess-arena-rating-en.txt), row by row:
# six (p, dp) columns per row; the last column holds .15 down to .00 and so is one row short.
TABLE_A_TEXT = """
1.0 800 .83 273 .66 117 .49 -7 .32 -133 .15 -296
.99 677 .82 262 .65 110 .48 -14 .31 -141 .14 -309
.98 589 .81 251 .64 102 .47 -21 .30 -149 .13 -322
.97 538 .80 240 .63 95 .46 -29 .29 -158 .12 -336
.96 501 .79 230 .62 87 .45 -36 .28 -166 .11 -351
.95 470 .78 220 .61 80 .44 -43 .27 -175 .10 -366
.94 444 .77 211 .60 72 .43 -50 .26 -184 .09 -383
.93 422 .76 202 .59 65 .42 -57 .25 -193 .08 -401
.92 401 .75 193 .58 57 .41 -65 .24 -202 .07 -422
.91 383 .74 184 .57 50 .40 -72 .23 -211 .06 -444
.90 366 .73 175 .56 43 .39 -80 .22 -220 .05 -470
.89 351 .72 166 .55 36 .38 -87 .21 -230 .04 -501
.88 336 .71 158 .54 29 .37 -95 .20 -240 .03 -538
.87 322 .70 149 .53 21 .36 -102 .19 -251 .02 -589
.86 309 .69 141 .52 14 .35 -110 .18 -262 .01 -677
.85 296 .68 133 .51 7 .34 -117 .17 -273 .00 -800
.84 284 .67 125 .50 0 .33 -125 .16 -284
"""

# Table B as printed in the seed: "D-range H L", one bin a line (sorted by D; the seed prints
# two bins a row). docs/systems/arena.md ("Rules and readings": Tables) names it FIDE's table 8.1b.
TABLE_B_TEXT = """
0-3 .50 .50
4-10 .51 .49
11-17 .52 .48
18-25 .53 .47
26-32 .54 .46
33-39 .55 .45
40-46 .56 .44
47-53 .57 .43
54-61 .58 .42
62-68 .59 .41
69-76 .60 .40
77-83 .61 .39
84-91 .62 .38
92-98 .63 .37
99-106 .64 .36
107-113 .65 .35
114-121 .66 .34
122-129 .67 .33
130-137 .68 .32
138-145 .69 .31
146-153 .70 .30
154-162 .71 .29
163-170 .72 .28
171-179 .73 .27
180-188 .74 .26
189-197 .75 .25
198-206 .76 .24
207-215 .77 .23
216-225 .78 .22
226-235 .79 .21
236-245 .80 .20
246-256 .81 .19
257-267 .82 .18
268-278 .83 .17
279-290 .84 .16
291-302 .85 .15
303-315 .86 .14
316-328 .87 .13
329-344 .88 .12
345-357 .89 .11
358-374 .90 .10
375-391 .91 .09
392-411 .92 .08
412-432 .93 .07
433-456 .94 .06
457-484 .95 .05
485-517 .96 .04
518-559 .97 .03
560-619 .98 .02
620-735 .99 .01
"""
# The seed's last bin: "> 735  1.0  .00".
ABOVE_735 = (100, 0)


def _hundredths(text: str) -> int:
    """ "1.0" -> 100, ".83" -> 83, ".00" -> 0 (the table's own notation)."""
    whole, _, frac = text.partition(".")
    return int(whole or "0") * 100 + int(frac.ljust(2, "0"))


def _table_a() -> dict[int, int]:
    tokens = TABLE_A_TEXT.split()
    return {_hundredths(tokens[i]): int(tokens[i + 1]) for i in range(0, len(tokens), 2)}


def _table_b() -> list[tuple[int, int, int, int]]:
    """(lowest D, highest D, H, L) per bin, all in hundredths for H and L."""
    bins = []
    for line in TABLE_B_TEXT.strip().splitlines():
        span, high, low = line.split()
        lower, upper = span.split("-")
        bins.append((int(lower), int(upper), _hundredths(high), _hundredths(low)))
    return bins


TABLE_A = _table_a()
TABLE_B = _table_b()
# Both edges of every bin: (D, H, L).
EDGES = [(d, high, low) for lower, upper, high, low in TABLE_B for d in (lower, upper)]


def test_typed_tables_are_complete_and_consistent() -> None:
    # A check on the literals above, so that a typing slip cannot pass silently.
    assert sorted(TABLE_A) == list(range(101))
    assert len(TABLE_B) == 50  # + the "> 735" bin = Table B's 51 bins
    assert TABLE_B[0][0] == 0
    assert TABLE_B[-1][1] == 735
    for (_, upper, high, _), (lower, _, next_high, _) in pairwise(TABLE_B):
        assert lower == upper + 1
        assert next_high == high + 1
    assert all(high + low == 100 for _, _, high, low in TABLE_B)


@pytest.mark.parametrize(("p", "dp"), sorted(TABLE_A.items()))
def test_table_a_gives_the_printed_dp_for_every_p(p: int, dp: int) -> None:
    assert dp_for(Hundredths(p)) == dp


def test_table_a_examples_of_the_rules() -> None:
    # docs/systems/arena.md, "Rules and readings" (qualifying): p = .1 -> -366, .2 -> -240, .3 -> -149,
    # .4 -> -72; p = .5 -> 0.
    assert [dp_for(Hundredths(p)) for p in (10, 20, 30, 40, 50)] == [-366, -240, -149, -72, 0]


@pytest.mark.parametrize("p", [-1, 101])
def test_table_a_refuses_p_outside_0_to_100(p: int) -> None:
    with pytest.raises(ValueError):
        dp_for(Hundredths(p))


@pytest.mark.parametrize(("d", "high", "low"), EDGES)
def test_table_b_gives_the_printed_h_at_both_edges_of_every_bin(d: int, high: int, low: int) -> None:
    assert pd_higher(Points(d)) == high


@pytest.mark.parametrize(("d", "high", "low"), EDGES)
def test_table_b_gives_h_to_the_higher_and_l_to_the_lower_player_at_every_bin_edge(d: int, high: int, low: int) -> None:
    # Ratings in hundredths: 1000.00 + D against 1000.00, and the reverse order.
    # (At D = 0 the ratings are equal and H = L = .50.)
    assert expected_scores(Hundredths(100_000 + d * 100), Hundredths(100_000)) == (high, low)
    assert expected_scores(Hundredths(100_000), Hundredths(100_000 + d * 100)) == (low, high)


@pytest.mark.parametrize("d", range(736))
def test_table_b_every_whole_d_up_to_735_falls_in_its_printed_bin(d: int) -> None:
    (high,) = [h for lower, upper, h, _ in TABLE_B if lower <= d <= upper]
    assert pd_higher(Points(d)) == high


@pytest.mark.parametrize("d", [736, 737, 800, 1000, 2400, 10_000])
def test_table_b_above_735_gives_1_00_and_0_00(d: int) -> None:
    # No 400-point cap (docs/systems/arena.md, "Rules and readings": Tables): "> 735" is 1.00 / .00.
    assert pd_higher(Points(d)) == ABOVE_735[0]
    assert expected_scores(Hundredths(100_000 + d * 100), Hundredths(100_000)) == ABOVE_735


def test_table_b_refuses_a_negative_d() -> None:
    with pytest.raises(ValueError):
        pd_higher(Points(-1))
