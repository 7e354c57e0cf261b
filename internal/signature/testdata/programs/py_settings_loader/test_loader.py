import loader


def test_load():
    assert loader.load("app.yaml") == {}
