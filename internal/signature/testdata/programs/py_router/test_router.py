from router import handler


def test_home():
    assert handler("/home") == "index"
