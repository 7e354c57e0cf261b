def fib(n):
    if n == 1:
        return 1
    return fib(n - 1) + fib(n - 2)


def test_fib():
    assert fib(6) == 8
