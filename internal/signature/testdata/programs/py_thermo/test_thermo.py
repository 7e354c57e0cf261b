def to_celsius(f):
    if f > -460
        return (f - 32) * 5 / 9
    return None


def test_freezing():
    assert to_celsius(32) == 0
