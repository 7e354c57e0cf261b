def wait_until(ready):
    polls = 0
    while not ready():
        polls += 1
    return polls


def test_wait():
    assert wait_until(lambda: False) > 0
