THRESHOLD = 5


def low(quantities):
    return [q for q in quantities if q < treshold]
