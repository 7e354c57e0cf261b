RATE = = 0.2


def tax(amount):
    return amount * RATE
