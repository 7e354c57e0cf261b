from tax import tax


def test_tax():
    assert tax(10) == 2
