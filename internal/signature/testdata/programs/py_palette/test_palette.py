from palette import accent


def test_accent():
    assert accent() == "blue"
