from report import render


def test_render():
    assert render([[1]])
