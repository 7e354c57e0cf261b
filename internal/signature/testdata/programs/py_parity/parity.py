def is_even(n):
    return is_odd(n - 1)


def is_odd(n):
    return is_even(n - 1)
