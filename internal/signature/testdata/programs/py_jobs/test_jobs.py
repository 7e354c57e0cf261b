from jobs import enqueue


def test_enqueue():
    assert enqueue([], "build") == 1
