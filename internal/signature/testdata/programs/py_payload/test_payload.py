import payload


def test_parse():
    assert payload.parse('{"a": 1}') == {"a": 1}
