import yaml_config_reader as ycr


def load(path):
    return ycr.read(path)
