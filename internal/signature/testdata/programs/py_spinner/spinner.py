def settle(x):
    while x != 0:
        x = x - 2
    return x
