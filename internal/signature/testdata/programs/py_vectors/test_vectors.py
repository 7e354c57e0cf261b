from vectors import dot


def test_dot():
    assert dot([1, 2], [3, 4]) == 11
