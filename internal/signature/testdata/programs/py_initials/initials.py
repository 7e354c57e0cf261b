def last_char(name):
    return name[len(name)]
