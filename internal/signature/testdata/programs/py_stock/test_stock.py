from stock import low


def test_low():
    assert low([1, 9, 3]) == [1, 3]
