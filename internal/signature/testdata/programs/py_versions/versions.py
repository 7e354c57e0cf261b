import re


def major(version):
    return int(re.match(r"v(\d+)\.", version).group(1))
