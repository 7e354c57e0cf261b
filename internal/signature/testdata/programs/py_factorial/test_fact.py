from fact import fact


def test_fact():
    assert fact(5) == 120
