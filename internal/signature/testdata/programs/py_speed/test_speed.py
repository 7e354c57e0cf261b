from speed import speed


def test_stationary():
    assert speed(0.0, 0) == 0.0
