from parity import is_even


def test_even():
    assert is_even(4)
