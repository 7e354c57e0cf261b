from requests_mocker import Mocker


def test_get():
    with Mocker() as m:
        assert m
