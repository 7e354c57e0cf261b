def parse(body):
    return json.loads(body)
