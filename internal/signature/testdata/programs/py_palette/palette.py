THEME = {"color": "blue", "size": 12}


def accent():
    return THEME["colour"]
