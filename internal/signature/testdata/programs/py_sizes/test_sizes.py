def size(value):
    return len(value)


def test_size_of_number():
    assert size(12345) == 5
