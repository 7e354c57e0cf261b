from initials import last_char


def test_last_char():
    assert last_char("grace") == "e"
