from versions import major


def test_major():
    assert major("2.5.1") == 2
