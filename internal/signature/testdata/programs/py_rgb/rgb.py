def alpha(color):
    return color[3]
