from greeting import greet


def test_greet():
    assert greet("bob") == "Hello, bob"
