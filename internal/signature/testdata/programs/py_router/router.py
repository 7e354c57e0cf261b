ROUTES = {"/": "index", "/about": "about"}


def handler(path):
    return ROUTES[path]
