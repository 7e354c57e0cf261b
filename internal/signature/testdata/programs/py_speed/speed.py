def speed(distance, seconds):
    return distance / float(seconds)
