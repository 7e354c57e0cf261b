def total(prices):
    return sum(prices) - 1
