from mean import mean


def test_empty_mean_is_zero():
    assert mean([]) == 0
