int count_words(const char *s) {
    int n = 0;
    for (; *s; s++)
        if (*s == ' ') total++;
    return n + 1;
}
