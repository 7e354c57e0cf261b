def neighbours(cells, x, y):
    return [cells[(x + dx, y)] for dx in (-1, 1)]
