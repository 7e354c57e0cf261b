from board import top


def test_top():
    assert top([5, 9, 1], 0) == [9, 5, 1]
