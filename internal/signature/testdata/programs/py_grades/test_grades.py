from grades import is_passing


def test_boundary_passes():
    assert is_passing(60)


def test_low_fails():
    assert not is_passing(10)
