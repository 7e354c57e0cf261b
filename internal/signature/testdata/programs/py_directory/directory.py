USERS = [{"id": 1, "name": "ada"}]


class User:
    def __init__(self, name):
        self.name = name


def find(user_id):
    for u in USERS:
        if u["id"] == str(user_id):
            return User(u["name"])
    return None
