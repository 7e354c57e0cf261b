import tabulatex


def render(rows):
    return tabulatex.tabulate(rows)
