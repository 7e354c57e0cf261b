from adder import increment


def test_increment():
    assert increment(41) == 42
