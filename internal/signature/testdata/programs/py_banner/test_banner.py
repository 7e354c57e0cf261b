from banner import banner


def test_banner():
    assert "HELLO" in banner("hello")
