def deltas(values):
    return [values[i + 1] - values[i] for i in range(len(values))]
