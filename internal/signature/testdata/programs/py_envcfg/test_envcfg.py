def host(config):
    return config.get("HOST").strip()


def test_host():
    assert host({"host": " db "}) == "db"
