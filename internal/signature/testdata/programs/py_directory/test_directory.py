from directory import find


def test_find():
    assert find(1).name == "ada"
