from seq import count_up


def test_count_up_includes_n():
    assert count_up(3) == [1, 2, 3]
