from rgb import alpha


def test_alpha_defaults():
    assert alpha((255, 128, 0)) == 255
