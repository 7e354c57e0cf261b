def frequencies(words):
    counts = {}
    for w in words:
        counts[w] += 1
    return counts


def test_frequencies():
    assert frequencies(["apple", "pear", "apple"])["apple"] == 2
