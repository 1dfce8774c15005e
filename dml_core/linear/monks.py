"""MONK's problem 1 test set (Thrun et al., 1991), as the UCI repository's ``monks-1.test`` prints it.

That file is every one of the 432 combinations of the six attributes, in lexicographic order (a1 slowest), labelled
by the rule (a1 = a2) or (a5 = 1): anml Table 1's Monk1 (432 samples, 6 features, 2 classes). It is generated here
byte for byte, so that it needs no download; its md5 is the one public loaders check the UCI file against.
"""

from __future__ import annotations

import itertools

# Values of a1..a6 (UCI's monks.names).
ATTRIBUTE_VALUES = (3, 3, 2, 3, 4, 2)


def monks1_label(attributes: tuple[int, ...]) -> int:
    """The class of MONK-1: 1 where a1 = a2 or a5 = 1.

    >>> monks1_label((1, 1, 1, 1, 2, 1)), monks1_label((1, 2, 1, 1, 1, 1)), monks1_label((1, 2, 1, 1, 2, 1))
    (1, 1, 0)
    """
    return int(attributes[0] == attributes[1] or attributes[4] == 1)


def monks1_test_text() -> bytes:
    """``monks-1.test``: one line " class a1 a2 a3 a4 a5 a6 data_<n>" per combination.

    >>> monks1_test_text().splitlines()[:2]
    [b' 1 1 1 1 1 1 1 data_1', b' 1 1 1 1 1 1 2 data_2']
    """
    combinations = itertools.product(*(range(1, count + 1) for count in ATTRIBUTE_VALUES))
    lines = (
        " " + " ".join(map(str, (monks1_label(values), *values))) + f" data_{number}\n"
        for number, values in enumerate(combinations, start=1)
    )
    return "".join(lines).encode("ascii")
