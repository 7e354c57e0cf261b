from circle import area


def test_unit_circle():
    assert round(area(1), 2) == 3.14
