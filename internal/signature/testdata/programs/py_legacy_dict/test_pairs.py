def pairs(mapping):
    return sorted(k + "=" + str(v) for k, v in mapping.iteritems())


def test_pairs():
    assert pairs({"b": 2, "a": 1}) == ["a=1", "b=2"]
