from grid import neighbours


def test_neighbours():
    cells = {(0, 0): "a", (1, 0): "b", (2, 0): "c"}
    assert neighbours(cells, 2, 0) == ["b"]
