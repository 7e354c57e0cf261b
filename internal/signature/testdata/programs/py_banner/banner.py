def banner(title):
    return title.uper().center(20)
