from repeat import repeat


def test_repeat_from_input():
    assert repeat("ab", "3") == "ababab"
