def fact(n):
    return n * fact(n - 1)
