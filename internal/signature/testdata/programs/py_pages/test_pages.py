from pages import page_count


def test_unpaged():
    assert page_count(10, 0) == 1
