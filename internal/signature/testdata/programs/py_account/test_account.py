from account import Account


def test_withdraw():
    assert Account(100).withdraw(30) == 70
