def greet(name):
    return "Hello, + name
