def repeat(word, times):
    return word * times
