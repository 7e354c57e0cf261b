from deltas import deltas


def test_deltas():
    assert deltas([1, 4, 9]) == [3, 5]
