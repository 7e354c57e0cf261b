def label(count):
    return "Items: " + count
