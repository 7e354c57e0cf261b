def is_passing(score):
    return score > 60
