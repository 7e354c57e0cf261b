import loud


def test_shout():
    assert loud.shout("hi") == "HI!"
