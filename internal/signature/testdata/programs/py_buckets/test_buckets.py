def bucket(key, n):
    return hash(key) % n


def test_bucket():
    assert bucket(7, 0) == 0
