from spinner import settle


def test_settle_odd():
    assert settle(7) == 0
