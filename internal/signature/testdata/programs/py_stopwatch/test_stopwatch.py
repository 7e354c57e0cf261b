def elapsed(start, end):
    duration = end - start
    return durration


def test_elapsed():
    assert elapsed(3, 10) == 7
