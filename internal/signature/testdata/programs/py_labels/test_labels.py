from labels import label


def test_label():
    assert label(3) == "Items: 3"
