def add(a, b):
    return a + b


def increment(x):
    return add(x)
