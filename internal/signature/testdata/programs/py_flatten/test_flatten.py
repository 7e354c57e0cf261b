from flatten import flatten


def test_flatten_words():
    assert flatten([["ab"], ["c"]]) == ["ab", "c"]
